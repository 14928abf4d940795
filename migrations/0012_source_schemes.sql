-- Originals in object storage (s3://BUCKET/KEY) are read only by workers that know the scheme. A worker
-- says which source schemes it reads when it registers (thumbs.workers.source_schemes); a worker of an
-- older release registers without saying, and so reads http and https only. During a rolling upgrade
-- such a worker would fail an s3:// job as blocked_source; instead its lease passes over the job, which
-- stays queued, its attempts untouched, for a worker that reads it.
--
-- The older worker's lease statement is compiled into it and knows nothing of this, so the database
-- does it: a BEFORE UPDATE trigger on the queued -> running change skips the row (returns NULL) when
-- the leasing worker's row does not list s3. A worker with no row yet (registration comes with its
-- first housekeeping round) is let through. The trigger's WHEN clause keeps it off every other update:
-- it runs only for s3:// jobs being leased.
--
-- Runs again unchanged on a schema that already has it.

ALTER TABLE thumbs.workers ADD COLUMN IF NOT EXISTS source_schemes text[] NOT NULL DEFAULT '{http,https}';

CREATE OR REPLACE FUNCTION thumbs.lease_only_readable_sources() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM thumbs.workers w
              WHERE w.id = NEW.leased_by AND NOT ('s3' = ANY (w.source_schemes))) THEN
    RETURN NULL;
  END IF;
  RETURN NEW;
END;
$$;

DROP TRIGGER IF EXISTS lease_only_readable_sources ON thumbs.jobs;
CREATE TRIGGER lease_only_readable_sources
  BEFORE UPDATE OF state ON thumbs.jobs
  FOR EACH ROW
  WHEN (OLD.state = 'queued' AND NEW.state = 'running' AND lower(left(OLD.source_url, 5)) = 's3://')
  EXECUTE FUNCTION thumbs.lease_only_readable_sources();
