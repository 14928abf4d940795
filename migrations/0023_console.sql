-- 0023: the indexes the console's job list filters by (`thumbd console`, /jobs): a page is the newest
-- jobs matching a filter after a keyset, and each filter needs an index that yields its matches in id
-- order, or a rare value would read the whole table. The external id has jobs_external_idx and a time
-- window jobs_finished_idx; the state and profile filters walk the primary key within a window of ids.
--
-- jobs_error_idx and jobs_owner_idx hold only the rows with an error code or an owner, so a write of
-- any other row pays nothing for them. A source prefix is searched in jobs_source_key_idx, rebuilt
-- with text_pattern_ops: the same index answers the equality lookups it served (a source's jobs, the
-- lease's siblings) and a LIKE 'prefix%' range whatever the database's collation, so the search adds
-- no index to the table's writes. Runs again unchanged on a schema that has it.

CREATE INDEX IF NOT EXISTS jobs_error_idx ON thumbs.jobs (error_code, id) WHERE error_code IS NOT NULL;
COMMENT ON INDEX thumbs.jobs_error_idx IS
  $$The console's jobs by error code, newest first, and thumbs.retry of every failed job of one code.$$;

CREATE INDEX IF NOT EXISTS jobs_owner_idx ON thumbs.jobs (owner, id) WHERE owner IS NOT NULL;
COMMENT ON INDEX thumbs.jobs_owner_idx IS
  $$The console's jobs of one owner, newest first (an owner may have few jobs among millions).$$;

DO $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM pg_index i JOIN pg_opclass o ON o.oid = i.indclass[0]
     WHERE i.indexrelid = to_regclass('thumbs.jobs_source_key_idx') AND o.opcname = 'text_pattern_ops')
  THEN
    DROP INDEX IF EXISTS thumbs.jobs_source_key_idx;
    CREATE INDEX jobs_source_key_idx ON thumbs.jobs (source_key text_pattern_ops);
  END IF;
END
$$;
COMMENT ON INDEX thumbs.jobs_source_key_idx IS
  $$A source's jobs (forgetting, the lease's siblings, re-renders) and the console's search by a prefix of the source (text_pattern_ops: LIKE 'prefix%' in any collation).$$;
