-- thumbd schema, version 2: attempt history, the worker registry, retention, storage settings for a
-- high-churn table, and the admin views of docs/admin-sql.md. Applied by `thumbd migrate` in one transaction.

-- Storage settings. Every job row is rewritten three to five times (enqueue, lease, heartbeats, finish),
-- and the finished rows are deleted by retention, so the table is mostly dead tuples between vacuums.
--  * fillfactor 80 leaves a fifth of each page free, so a heartbeat (which changes only
--    lease_expires_at, a column no index covers) is a HOT update: new version on the same page, no index
--    writes. Lease and finish change `state`, which the partial indexes name, so they cannot be HOT.
--  * autovacuum at 2% dead rows instead of 20%: the ready-index scans of the lease statement slow down
--    with every dead entry they step over, so vacuum often and cheaply rather than rarely and long.
--  * no cost delay: the table is small and hot; a throttled vacuum falls behind the churn.
ALTER TABLE thumbs.jobs SET (
  fillfactor = 80,
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_threshold = 200,
  autovacuum_vacuum_insert_scale_factor = 0.05,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_vacuum_cost_delay = 0
);

-- The rescue statement and the workers view look up running jobs. Keyed on id, which is unique and
-- grows: an index keyed on lease_expires_at or leased_by (the same value for a whole leased batch) made
-- the no-op benchmark 25% slower, since every lease inserts 100 equal keys into pages full of dead
-- duplicates. Keying on id also leaves heartbeats HOT (they change only lease_expires_at).
DROP INDEX thumbs.jobs_lease_idx;
CREATE INDEX jobs_running_idx ON thumbs.jobs (id) WHERE state = 'running';
-- Retention and the throughput view read finished jobs by finish time (id makes each key unique, for
-- the same reason as above: a batch finishes at one now()).
CREATE INDEX jobs_finished_idx ON thumbs.jobs (finished_at, id)
  WHERE state IN ('succeeded', 'failed', 'cancelled');

-- The bounded history of attempts that did not succeed (the succeeding one is the row itself: leased_by,
-- started_at, finished_at). One JSON object per ended attempt, oldest first, at most 10: see
-- thumbs.job_attempts for the columns.
ALTER TABLE thumbs.jobs ADD COLUMN attempt_log jsonb NOT NULL DEFAULT '[]';

CREATE FUNCTION thumbs.append_attempt(log jsonb, entry jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_array_length(log) >= 10 THEN (log - 0) || jsonb_build_array(entry)
              ELSE log || jsonb_build_array(entry) END;
$$;

-- Every worker process, while it runs. Written at start, refreshed by each heartbeat round, removed at a
-- clean exit; rows of workers that vanished (SIGKILL, lost machine) expire after three lease TTLs.
CREATE TABLE thumbs.workers (
  id                 text PRIMARY KEY,
  host               text NOT NULL,
  pid                int NOT NULL,
  version            text NOT NULL,
  concurrency        int NOT NULL,
  memory_budget      bigint NOT NULL,
  lease_ttl          interval NOT NULL,
  state              text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'stopping')),
  started_at         timestamptz NOT NULL DEFAULT now(),
  last_heartbeat_at  timestamptz NOT NULL DEFAULT now(),
  jobs_succeeded     bigint NOT NULL DEFAULT 0,
  jobs_failed        bigint NOT NULL DEFAULT 0,
  jobs_retried       bigint NOT NULL DEFAULT 0,
  leases_lost        bigint NOT NULL DEFAULT 0
);

-- Deletes registry rows whose worker stopped heartbeating three lease TTLs ago (at least a minute).
CREATE FUNCTION thumbs.expire_workers() RETURNS int
LANGUAGE sql AS $$
  WITH gone AS (
    DELETE FROM thumbs.workers
     WHERE last_heartbeat_at < now() - greatest(lease_ttl * 3, interval '1 minute')
    RETURNING 1)
  SELECT count(*)::int FROM gone;
$$;

-- Retention: deletes up to batch_size finished jobs (and, by cascade, their variant rows) that finished
-- before now() - older_than. Bounded so it never holds many locks or writes a huge WAL burst; call it
-- until it returns less than batch_size. Stored thumbnails are not touched: they are content-addressed
-- and may be shared by other jobs.
CREATE FUNCTION thumbs.prune(older_than interval DEFAULT '7 days', batch_size int DEFAULT 1000) RETURNS int
LANGUAGE sql AS $$
  WITH doomed AS (
    SELECT id FROM thumbs.jobs
     WHERE state IN ('succeeded', 'failed', 'cancelled') AND finished_at < now() - older_than
     ORDER BY finished_at
     LIMIT batch_size
     FOR UPDATE SKIP LOCKED),
  deleted AS (
    DELETE FROM thumbs.jobs j USING doomed WHERE j.id = doomed.id RETURNING 1)
  SELECT count(*)::int FROM deleted;
$$;

-- Notifications carry no payload: PostgreSQL folds identical notifications of one transaction into one,
-- so a bulk enqueue wakes the workers once. Jobs scheduled for later send none; polling finds them.
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

CREATE OR REPLACE FUNCTION thumbs.retry(job_id bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  UPDATE thumbs.jobs j
     SET state = 'queued', attempts = 0, run_at = now(), error_code = NULL, last_error = NULL,
         finished_at = NULL, started_at = NULL
   WHERE j.id = retry.job_id AND j.state IN ('failed', 'cancelled');
  IF FOUND THEN
    PERFORM pg_notify('thumbs_jobs', '');
  END IF;
  RETURN FOUND;
EXCEPTION WHEN unique_violation THEN
  RETURN false;
END;
$$;

-- Admin views (docs/admin-sql.md has the questions they answer, with real output).

-- Jobs that failed for good, newest first, with their error.
CREATE VIEW thumbs.failed_jobs AS
SELECT id, source_url, profile, error_code, last_error, attempts, max_attempts, created_at, finished_at
  FROM thumbs.jobs
 WHERE state = 'failed'
 ORDER BY finished_at DESC;

-- Running jobs whose lease has expired: their worker died or froze. Any worker's rescue returns them to
-- the queue; rows here for longer than a few seconds mean no worker is running.
CREATE VIEW thumbs.stuck_jobs AS
SELECT j.id, j.source_url, j.profile, j.attempts, j.leased_by, j.started_at, j.lease_expires_at,
       now() - j.lease_expires_at AS overdue,
       EXISTS (SELECT 1 FROM thumbs.workers w WHERE w.id = j.leased_by) AS worker_registered
  FROM thumbs.jobs j
 WHERE j.state = 'running' AND j.lease_expires_at < now()
 ORDER BY j.lease_expires_at;

-- Workers with what they are doing now and what they have done since they started.
CREATE VIEW thumbs.worker_overview AS
SELECT w.id, w.host, w.pid, w.state, w.version, w.concurrency, w.memory_budget,
       (SELECT count(*) FROM thumbs.jobs j WHERE j.state = 'running' AND j.leased_by = w.id) AS running,
       w.jobs_succeeded, w.jobs_failed, w.jobs_retried, w.leases_lost,
       w.started_at, now() - w.last_heartbeat_at AS heartbeat_age,
       w.last_heartbeat_at < now() - w.lease_ttl AS stale
  FROM thumbs.workers w
 ORDER BY w.started_at;

-- Jobs finished per minute over the last hour (zero rows included), with the median run time of the
-- successes. Built from finished_at, so it reflects jobs retention has not yet deleted.
CREATE VIEW thumbs.throughput AS
WITH minutes AS (
  SELECT generate_series(date_trunc('minute', now()) - interval '59 minutes', date_trunc('minute', now()),
                         interval '1 minute') AS minute),
finished AS (
  SELECT date_trunc('minute', finished_at) AS minute, state, finished_at - started_at AS took
    FROM thumbs.jobs
   WHERE state IN ('succeeded', 'failed', 'cancelled')
     AND finished_at >= date_trunc('minute', now()) - interval '59 minutes')
SELECT m.minute,
       count(*) FILTER (WHERE f.state = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE f.state = 'failed') AS failed,
       count(*) FILTER (WHERE f.state = 'cancelled') AS cancelled,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM f.took))
         FILTER (WHERE f.state = 'succeeded') AS median_seconds
  FROM minutes m
  LEFT JOIN finished f ON f.minute = m.minute
 GROUP BY m.minute
 ORDER BY m.minute;

-- One row per ended attempt that did not succeed, from the jobs' bounded attempt logs.
CREATE VIEW thumbs.job_attempts AS
SELECT j.id AS job_id, j.source_url, a.attempt, a.worker, a.started_at, a.ended_at, a.outcome, a.error_code,
       a.error
  FROM thumbs.jobs j,
       jsonb_to_recordset(j.attempt_log)
         AS a(attempt int, worker text, started_at timestamptz, ended_at timestamptz, outcome text,
              error_code text, error text)
 ORDER BY j.id, a.ended_at;
