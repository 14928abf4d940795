-- thumbd schema, version 3: one download per URL (docs/fetching.md): the mark that lets a lease take a
-- URL's other jobs along, and one row per original URL a worker downloaded.
-- Applied by `thumbd migrate` in one transaction.

-- True on the queued jobs of a URL that more than one live job names (the same photo under several
-- profiles). The lease looks for a picked job's siblings only when it is marked: probing the URL index
-- for every leased job cost the no-op benchmark 20% of its throughput, and most URLs have one job.
ALTER TABLE thumbs.jobs ADD COLUMN shares_source boolean NOT NULL DEFAULT false;

-- enqueue as in 0002, plus: a new job for a URL that another live job names marks the URL's queued jobs
-- (its own included). SKIP LOCKED: a job being leased at this moment is about to run anyway.
-- Jobs inserted without thumbs.enqueue are never marked, and are leased without their siblings.
CREATE OR REPLACE FUNCTION thumbs.enqueue(
  source_url text,
  profile text DEFAULT 'default',
  priority int DEFAULT 0,
  run_at timestamptz DEFAULT now(),
  metadata jsonb DEFAULT '{}'
) RETURNS bigint
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  job_id bigint;
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
    ON CONFLICT (source_url, profile) WHERE state IN ('queued', 'running') DO NOTHING
    RETURNING j.id INTO job_id;
    IF job_id IS NOT NULL THEN
      PERFORM 1 FROM thumbs.jobs o
       WHERE o.source_url = enqueue.source_url AND o.state IN ('queued', 'running') AND o.id <> job_id
       LIMIT 1;
      IF FOUND THEN
        UPDATE thumbs.jobs m SET shares_source = true
         WHERE m.id IN (SELECT o.id FROM thumbs.jobs o
                         WHERE o.source_url = enqueue.source_url AND o.state = 'queued'
                           AND NOT o.shares_source
                           FOR UPDATE SKIP LOCKED);
      END IF;
      IF coalesce(enqueue.run_at, now()) <= now() THEN
        PERFORM pg_notify('thumbs_jobs', '');
      END IF;
      RETURN job_id;
    END IF;
    SELECT j.id INTO job_id FROM thumbs.jobs j
     WHERE j.source_url = enqueue.source_url AND j.profile = enqueue.profile
       AND j.state IN ('queued', 'running');
    IF job_id IS NOT NULL THEN
      RETURN job_id;
    END IF;
    -- The live job finished between our insert and our read: try again.
  END LOOP;
END;
$$;

-- What the origin served at each URL, as of the last time a worker asked: for admins ("how big are the
-- originals?", "which URLs changed?"), and the ETag / Last-Modified a conditional request sends.
-- Written once per download (not once per job), by the worker that downloaded it.
CREATE TABLE thumbs.originals (
  url               text PRIMARY KEY,
  bytes             bigint NOT NULL,
  sha256            text NOT NULL,
  content_type      text,
  etag              text,
  last_modified     text,
  -- From the file's header; NULL when the format is not one thumbd can size without decoding.
  format            text,
  width             int,
  height            int,
  first_fetched_at  timestamptz NOT NULL DEFAULT now(),
  -- The last full download, and the last time the origin confirmed the copy (download or 304).
  fetched_at        timestamptz NOT NULL DEFAULT now(),
  checked_at        timestamptz NOT NULL DEFAULT now(),
  downloads         bigint NOT NULL DEFAULT 1,
  revalidations     bigint NOT NULL DEFAULT 0,
  fetched_by        text
);

CREATE INDEX originals_checked_idx ON thumbs.originals (checked_at);

-- Rows no worker has confirmed for `older_than` go, `batch_size` at a time (the worker's retention
-- housekeeping calls it with the same age as thumbs.prune).
CREATE FUNCTION thumbs.prune_originals(older_than interval DEFAULT '7 days', batch_size int DEFAULT 1000)
RETURNS int
LANGUAGE sql AS $$
  WITH doomed AS (
    SELECT url FROM thumbs.originals
     WHERE checked_at < now() - older_than
     ORDER BY checked_at
     LIMIT batch_size
     FOR UPDATE SKIP LOCKED),
  deleted AS (
    DELETE FROM thumbs.originals o USING doomed WHERE o.url = doomed.url RETURNING 1)
  SELECT count(*)::int FROM deleted;
$$;
