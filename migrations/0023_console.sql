-- 0023: the indexes the console's job list filters by (`thumbd console`, /jobs): a page is the newest
-- jobs matching a filter after a keyset, and each filter needs an index that yields its matches in id
-- order, or a rare value would read the whole table. The state and profile filters walk the primary key
-- backwards (every state and profile is common enough), the external id has jobs_external_idx, and a
-- time window has jobs_finished_idx.
--
-- jobs_error_idx holds only the rows with an error code (failed jobs, and queued ones waiting out a
-- retry's backoff), so a write of any other row pays nothing for it. Runs again unchanged on a schema
-- that has it.

CREATE INDEX IF NOT EXISTS jobs_error_idx ON thumbs.jobs (error_code, id) WHERE error_code IS NOT NULL;
COMMENT ON INDEX thumbs.jobs_error_idx IS
  $$The console's jobs by error code, newest first, and thumbs.retry of every failed job of one code.$$;

CREATE INDEX IF NOT EXISTS jobs_owner_idx ON thumbs.jobs (owner, id) WHERE owner IS NOT NULL;
COMMENT ON INDEX thumbs.jobs_owner_idx IS
  $$The console's jobs of one owner, newest first (an owner may have few jobs among millions).$$;

-- text_pattern_ops: a LIKE 'prefix%' range whatever the database's collation.
CREATE INDEX IF NOT EXISTS jobs_source_url_idx ON thumbs.jobs (source_url text_pattern_ops);
COMMENT ON INDEX thumbs.jobs_source_url_idx IS
  $$The console's jobs by a prefix of their source URL (a bucket, a folder, one photo's URL).$$;
