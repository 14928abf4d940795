-- thumbd schema, version 1: the queue, its results, profiles, and the SQL API of CONTRACT.md.
-- Applied by `thumbd migrate` inside one transaction.

CREATE SCHEMA IF NOT EXISTS thumbs;

CREATE TABLE thumbs.profiles (
  name        text PRIMARY KEY,
  spec        jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

INSERT INTO thumbs.profiles (name, spec) VALUES ('default', '{
  "variants": [
    {"name": "large",  "width": 1600, "height": 1600, "fit": "inside", "format": "jpeg", "quality": 82},
    {"name": "medium", "width": 800,  "height": 800,  "fit": "inside", "format": "jpeg", "quality": 82},
    {"name": "small",  "width": 320,  "height": 320,  "fit": "inside", "format": "jpeg", "quality": 80},
    {"name": "square", "width": 256,  "height": 256,  "fit": "cover",  "format": "jpeg", "quality": 80}
  ]
}');

CREATE TABLE thumbs.jobs (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  source_url        text NOT NULL,
  profile           text NOT NULL REFERENCES thumbs.profiles (name),
  state             text NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  priority          int NOT NULL DEFAULT 0,
  attempts          int NOT NULL DEFAULT 0,
  max_attempts      int NOT NULL DEFAULT 5 CHECK (max_attempts > 0),
  run_at            timestamptz NOT NULL DEFAULT now(),
  error_code        text,
  last_error        text,
  metadata          jsonb NOT NULL DEFAULT '{}',
  created_at        timestamptz NOT NULL DEFAULT now(),
  started_at        timestamptz,
  finished_at       timestamptz,
  -- The lease: who holds the job and until when. Every write a worker makes is fenced on lease_token.
  lease_token       uuid,
  lease_expires_at  timestamptz,
  leased_by         text
);

-- Ready jobs in lease order; partial, so finished jobs cost the lease query nothing.
CREATE INDEX jobs_ready_idx ON thumbs.jobs (priority DESC, run_at, id) WHERE state = 'queued';
-- At most one live job per (source_url, profile): what makes thumbs.enqueue race-free.
CREATE UNIQUE INDEX jobs_live_unique_idx ON thumbs.jobs (source_url, profile)
  WHERE state IN ('queued', 'running');
-- Expired leases, for the rescue statement.
CREATE INDEX jobs_lease_idx ON thumbs.jobs (lease_expires_at) WHERE state = 'running';

CREATE TABLE thumbs.variants (
  job_id       bigint NOT NULL REFERENCES thumbs.jobs (id) ON DELETE CASCADE,
  name         text NOT NULL,
  width        int NOT NULL,
  height       int NOT NULL,
  format       text NOT NULL,
  bytes        bigint NOT NULL,
  storage_key  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, name)
);

-- Adds a job, or returns the live one for the same (source_url, profile). The partial unique index makes
-- this safe under concurrent callers: the loser of a race sees the conflict and reads the winner's id.
CREATE FUNCTION thumbs.enqueue(
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
      PERFORM pg_notify('thumbs_jobs', job_id::text);
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

-- Requeues a failed or cancelled job with a fresh set of attempts. False when the job is not failed or
-- cancelled, or when another live job for the same source and profile exists.
CREATE FUNCTION thumbs.retry(job_id bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  UPDATE thumbs.jobs j
     SET state = 'queued', attempts = 0, run_at = now(), error_code = NULL, last_error = NULL,
         finished_at = NULL, started_at = NULL
   WHERE j.id = retry.job_id AND j.state IN ('failed', 'cancelled');
  IF FOUND THEN
    PERFORM pg_notify('thumbs_jobs', retry.job_id::text);
  END IF;
  RETURN FOUND;
EXCEPTION WHEN unique_violation THEN
  RETURN false;
END;
$$;

-- Cancels a queued or running job. A running job's worker finds its lease gone at its next write and
-- discards its results.
CREATE FUNCTION thumbs.cancel(job_id bigint) RETURNS boolean
LANGUAGE sql AS $$
  WITH cancelled AS (
    UPDATE thumbs.jobs j
       SET state = 'cancelled', finished_at = now(), lease_token = NULL, lease_expires_at = NULL
     WHERE j.id = cancel.job_id AND j.state IN ('queued', 'running')
    RETURNING 1)
  SELECT count(*) > 0 FROM cancelled;
$$;

-- One row per state, also for states with no jobs, with the age of the oldest job in it.
CREATE VIEW thumbs.queue_overview AS
SELECT s.state,
       count(j.id) AS jobs,
       now() - min(j.created_at) AS oldest_age
  FROM unnest(ARRAY['queued', 'running', 'succeeded', 'failed', 'cancelled']) WITH ORDINALITY AS s(state, ord)
  LEFT JOIN thumbs.jobs j ON j.state = s.state
 GROUP BY s.state, s.ord
 ORDER BY s.ord;
