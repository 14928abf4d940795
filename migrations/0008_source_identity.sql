-- 0008: a source is named by its identity, not by its exact URL.
--
-- A presigned URL carries its authentication in query parameters that change on every signing (the
-- signature, the date, the credential, ...): two presigned URLs of one object differ only there. Unique
-- enqueue and shared downloads compare the URL without them; every other part of the URL still counts.
-- The worker's SourceURL.identity does the same (SQLStatementTests holds the two to the same answers).
CREATE FUNCTION thumbs.source_identity(url text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE
    WHEN strpos(split_part(url, '#', 1), '?') = 0 THEN url
    ELSE (
      WITH cut AS (
        SELECT split_part(url, '#', 1) AS before_fragment,
               CASE WHEN strpos(url, '#') > 0 THEN substr(url, strpos(url, '#')) ELSE '' END AS fragment),
      parts AS (
        SELECT left(before_fragment, strpos(before_fragment, '?') - 1) AS base,
               substr(before_fragment, strpos(before_fragment, '?') + 1) AS query,
               fragment
          FROM cut),
      kept AS (
        SELECT base, fragment,
               (SELECT string_agg(p, '&' ORDER BY n)
                  FROM unnest(string_to_array(query, '&')) WITH ORDINALITY AS t(p, n)
                 WHERE split_part(p, '=', 1) NOT IN (
                   'X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires',
                   'X-Amz-SignedHeaders', 'X-Amz-Signature', 'X-Amz-Security-Token',
                   'AWSAccessKeyId', 'Signature', 'Expires')) AS query
          FROM parts)
      SELECT base || CASE WHEN coalesce(query, '') = '' THEN '' ELSE '?' || query END || fragment FROM kept)
  END;
$$;

ALTER TABLE thumbs.jobs
  ADD COLUMN source_key text GENERATED ALWAYS AS (thumbs.source_identity(source_url)) STORED;

-- At most one live job per (source identity, profile): what makes thumbs.enqueue race-free.
CREATE UNIQUE INDEX jobs_live_source_idx ON thumbs.jobs (source_key, profile)
  WHERE state IN ('queued', 'running');
DROP INDEX thumbs.jobs_live_unique_idx;

-- thumbs.enqueue: a source already queued or running under this profile returns that job; a queued one
-- takes the newer URL, so that a fresh presigned URL replaces one that may expire while the job waits.
CREATE OR REPLACE FUNCTION thumbs.enqueue(
  source_url text,
  profile text DEFAULT 'default',
  priority int DEFAULT 0,
  run_at timestamptz DEFAULT now(),
  metadata jsonb DEFAULT '{}'
) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  job_id bigint;
  key text := thumbs.source_identity(enqueue.source_url);
BEGIN
  IF source_url IS NULL OR source_url = '' THEN
    RAISE EXCEPTION 'thumbs.enqueue: source_url must not be empty' USING ERRCODE = '22023';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM thumbs.profiles p WHERE p.name = enqueue.profile) THEN
    RAISE EXCEPTION 'thumbs.enqueue: no profile named %', enqueue.profile USING ERRCODE = '22023';
  END IF;
  LOOP
    INSERT INTO thumbs.jobs AS j (source_url, profile, priority, run_at, metadata)
    VALUES (enqueue.source_url, enqueue.profile, coalesce(enqueue.priority, 0),
            coalesce(enqueue.run_at, now()), coalesce(enqueue.metadata, '{}'))
    ON CONFLICT (source_key, profile) WHERE state IN ('queued', 'running') DO NOTHING
    RETURNING j.id INTO job_id;
    IF job_id IS NOT NULL THEN
      -- Other live jobs of the source (other profiles): the lease takes them together, for one download.
      PERFORM 1 FROM thumbs.jobs o
       WHERE o.source_key = key AND o.state IN ('queued', 'running') AND o.id <> job_id
       LIMIT 1;
      IF FOUND THEN
        UPDATE thumbs.jobs m SET shares_source = true
         WHERE m.id IN (SELECT o.id FROM thumbs.jobs o
                         WHERE o.source_key = key AND o.state = 'queued' AND NOT o.shares_source
                         FOR UPDATE SKIP LOCKED);
      END IF;
      IF coalesce(enqueue.run_at, now()) <= now() THEN
        PERFORM pg_notify('thumbs_jobs', '');
      END IF;
      RETURN job_id;
    END IF;
    UPDATE thumbs.jobs j SET source_url = enqueue.source_url
     WHERE j.source_key = key AND j.profile = enqueue.profile AND j.state = 'queued'
       AND j.source_url <> enqueue.source_url
    RETURNING j.id INTO job_id;
    IF job_id IS NOT NULL THEN
      RETURN job_id;
    END IF;
    SELECT j.id INTO job_id FROM thumbs.jobs j
     WHERE j.source_key = key AND j.profile = enqueue.profile AND j.state IN ('queued', 'running');
    IF job_id IS NOT NULL THEN
      RETURN job_id;
    END IF;
    -- The live job finished between our insert and our read: try again.
  END LOOP;
END;
$$;
