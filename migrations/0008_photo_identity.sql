-- 0008: what a job stands for: its source's identity, or the backend's own id for the photo.
--
-- A presigned URL carries its authentication in query parameters that change on every signing (the
-- signature, the date, the credential, ...): two presigned URLs of one object differ only there. Unique
-- enqueue and shared downloads compare the URL without them (thumbs.source_identity); every other part
-- of the URL still counts. The worker's SourceURL.identity does the same (PresignedSourceTests holds the
-- two to the same answers). thumbs.jobs.source_key keeps it, set when a job is inserted or its
-- source_url changes (enqueue, or an operator by hand) and never otherwise: the lease, heartbeat and
-- completion statements update every job several times, and PostgreSQL would recompute a stored
-- generated column on each of them.
--
-- thumbs.enqueue(..., external_id => 'photo-42') stores the backend's id on the job. With an external
-- id, the pair (external_id, profile) alone decides uniqueness: while such a job is queued, enqueue
-- returns it and the job takes the newer source URL (an edited photo's new original wins); while one is
-- running, a new job is queued behind it. Without one, the source decides, and a queued job takes a
-- fresher URL of its source (a new presigned URL replaces one that may expire while the job waits).
--
-- Filling source_key rewrites every row of thumbs.jobs: on a very large table, run this migration at a
-- quiet time. Runs again unchanged on a schema that already has it.

-- PL/pgSQL rather than SQL: a SQL function that cannot be inlined is planned again on every call (it
-- took 0.26 ms, twice per enqueue), where PL/pgSQL keeps its plans for the session.
CREATE OR REPLACE FUNCTION thumbs.source_identity(url text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  hash int := strpos(url, '#');
  before_fragment text := CASE WHEN hash > 0 THEN left(url, hash - 1) ELSE url END;
  question int := strpos(before_fragment, '?');
  kept text;
BEGIN
  IF question = 0 THEN
    RETURN url;
  END IF;
  SELECT string_agg(p, '&' ORDER BY n) INTO kept
    FROM unnest(string_to_array(substr(before_fragment, question + 1), '&')) WITH ORDINALITY AS t(p, n)
   WHERE split_part(p, '=', 1) NOT IN (
     'X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders',
     'X-Amz-Signature', 'X-Amz-Security-Token', 'AWSAccessKeyId', 'Signature', 'Expires');
  RETURN left(before_fragment, question - 1)
    || CASE WHEN coalesce(kept, '') = '' THEN '' ELSE '?' || kept END
    || CASE WHEN hash > 0 THEN substr(url, hash) ELSE '' END;
END;
$$;

ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS source_key text;
UPDATE thumbs.jobs SET source_key = thumbs.source_identity(source_url) WHERE source_key IS NULL;

CREATE OR REPLACE FUNCTION thumbs.set_source_key() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.source_key := thumbs.source_identity(NEW.source_url);
  RETURN NEW;
END;
$$;

DROP TRIGGER IF EXISTS jobs_source_key ON thumbs.jobs;
CREATE TRIGGER jobs_source_key BEFORE INSERT OR UPDATE OF source_url ON thumbs.jobs
  FOR EACH ROW EXECUTE FUNCTION thumbs.set_source_key();

ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS external_id text;

CREATE INDEX IF NOT EXISTS jobs_external_idx ON thumbs.jobs (external_id, profile, id)
  WHERE external_id IS NOT NULL;
-- At most one queued job per photo and profile.
CREATE UNIQUE INDEX IF NOT EXISTS jobs_queued_external_idx ON thumbs.jobs (external_id, profile)
  WHERE state = 'queued' AND external_id IS NOT NULL;
-- At most one live job per source and profile among the jobs without an external id: what makes
-- thumbs.enqueue race-free for them. It replaces 0001's index on the exact URL.
CREATE UNIQUE INDEX IF NOT EXISTS jobs_live_source_anonymous_idx ON thumbs.jobs (source_key, profile)
  WHERE state IN ('queued', 'running') AND external_id IS NULL;
DROP INDEX IF EXISTS thumbs.jobs_live_unique_idx;
-- The lease's and enqueue's lookups of a source's other live jobs, with an external id or not.
CREATE INDEX IF NOT EXISTS jobs_live_source_key_idx ON thumbs.jobs (source_key)
  WHERE state IN ('queued', 'running');

DROP FUNCTION IF EXISTS thumbs.enqueue(text, text, integer, timestamptz, jsonb);

CREATE OR REPLACE FUNCTION thumbs.enqueue(
  source_url text,
  profile text DEFAULT 'default',
  priority int DEFAULT 0,
  run_at timestamptz DEFAULT now(),
  metadata jsonb DEFAULT '{}',
  external_id text DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  job_id bigint;
  key text := thumbs.source_identity(enqueue.source_url);
  queued_url text;
BEGIN
  IF source_url IS NULL OR source_url = '' THEN
    RAISE EXCEPTION 'thumbs.enqueue: source_url must not be empty' USING ERRCODE = '22023';
  END IF;
  IF external_id = '' THEN
    RAISE EXCEPTION 'thumbs.enqueue: external_id must not be empty (NULL for none)' USING ERRCODE = '22023';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM thumbs.profiles p WHERE p.name = enqueue.profile) THEN
    RAISE EXCEPTION 'thumbs.enqueue: no profile named %', enqueue.profile USING ERRCODE = '22023';
  END IF;
  LOOP
    -- A queued job of the same photo (or, without an external id, of the same source) is the answer,
    -- and takes the newer URL: an edited photo's new original, or a fresh presigned URL.
    -- The photo's queued job is locked first: a lease skips it meanwhile (SKIP LOCKED), or, when a lease
    -- took it first, this finds it running and queues a new job, so that a new original is never lost.
    -- A source's running job is the answer too, and keeps the URL it is fetching.
    IF enqueue.external_id IS NOT NULL THEN
      SELECT j.id, j.source_url INTO job_id, queued_url FROM thumbs.jobs j
       WHERE j.external_id = enqueue.external_id AND j.profile = enqueue.profile AND j.state = 'queued'
       FOR UPDATE;
    ELSE
      SELECT j.id, j.source_url INTO job_id, queued_url FROM thumbs.jobs j
       WHERE j.source_key = key AND j.profile = enqueue.profile AND j.state IN ('queued', 'running')
         AND j.external_id IS NULL;
    END IF;
    IF job_id IS NOT NULL THEN
      IF queued_url <> enqueue.source_url THEN
        UPDATE thumbs.jobs j SET source_url = enqueue.source_url WHERE j.id = job_id AND j.state = 'queued';
      END IF;
      RETURN job_id;
    END IF;

    INSERT INTO thumbs.jobs AS j (source_url, profile, priority, run_at, metadata, external_id)
    VALUES (enqueue.source_url, enqueue.profile, coalesce(enqueue.priority, 0),
            coalesce(enqueue.run_at, now()), coalesce(enqueue.metadata, '{}'), enqueue.external_id)
    ON CONFLICT DO NOTHING
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
    -- Another enqueue of the same photo or source committed first: take its job on the next turn.
  END LOOP;
END;
$$;
