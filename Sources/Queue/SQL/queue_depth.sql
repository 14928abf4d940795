-- name: queue_depth
-- The live part of the queue, for metrics and readiness: jobs queued, of those the ones due now
-- (ready), jobs running, how long the oldest ready job has been due (0 when none is), and the objects
-- collection still has to decide on or delete (gc_backlog, migrations/0013).
--
-- Every worker asks every few seconds, and the counts read every live job's index entry: a fleet of
-- many workers over a backlog of millions would spend a database core counting. So the fleet shares
-- one count, thumbs.queue_sample (migrations/0019): a sample younger than @max_age seconds is the answer;
-- an older one is counted again by the one worker that takes its row lock (SKIP LOCKED: the others
-- answer with the old sample meanwhile, its oldest_ready_seconds aged). @max_age = 0 always counts.
--
-- The counts read only the partial indexes of the live states, never the finished jobs the table may
-- hold until retention deletes them: one scan of jobs_ready_idx (state = 'queued', which holds run_at)
-- gives queued, ready and the oldest run_at, and jobs_running_idx gives running; gc_backlog comes from
-- the partial index of candidates.
-- params: max_age float8
-- returns: queued bigint, ready bigint, running bigint, oldest_ready_seconds float8, gc_backlog bigint
-- deadline: quick
WITH stale AS MATERIALIZED (
  SELECT s.one FROM thumbs.queue_sample s
   WHERE s.taken_at <= now() - make_interval(secs => @max_age::float8)
   FOR UPDATE SKIP LOCKED),
recount AS MATERIALIZED (
  SELECT 1 AS yes WHERE EXISTS (SELECT FROM stale) OR NOT EXISTS (SELECT FROM thumbs.queue_sample)),
counted AS (
  SELECT q.queued, q.ready,
         (SELECT count(*) FROM thumbs.jobs WHERE state = 'running') AS running,
         coalesce(extract(epoch FROM now() - q.oldest_ready), 0)::float8 AS oldest_ready_seconds,
         (SELECT count(*) FROM thumbs.gc_objects g WHERE g.state IS NOT NULL) AS gc_backlog
    FROM recount,
         LATERAL (SELECT count(*) AS queued,
                         count(*) FILTER (WHERE run_at <= now()) AS ready,
                         min(run_at) FILTER (WHERE run_at <= now()) AS oldest_ready
                    FROM thumbs.jobs
                   WHERE state = 'queued') q),
saved AS (
  INSERT INTO thumbs.queue_sample AS s (one, taken_at, queued, ready, running, oldest_ready_seconds,
                                        gc_backlog)
  SELECT true, now(), c.queued, c.ready, c.running, c.oldest_ready_seconds, c.gc_backlog FROM counted c
  ON CONFLICT (one) DO UPDATE
     SET taken_at = excluded.taken_at, queued = excluded.queued, ready = excluded.ready,
         running = excluded.running, oldest_ready_seconds = excluded.oldest_ready_seconds,
         gc_backlog = excluded.gc_backlog
  RETURNING s.queued, s.ready, s.running, s.oldest_ready_seconds, s.gc_backlog)
SELECT queued, ready, running, oldest_ready_seconds, gc_backlog FROM saved
UNION ALL
SELECT s.queued, s.ready, s.running,
       s.oldest_ready_seconds
         + CASE WHEN s.ready > 0 THEN extract(epoch FROM now() - s.taken_at)::float8 ELSE 0 END,
       s.gc_backlog
  FROM thumbs.queue_sample s
 WHERE NOT EXISTS (SELECT FROM saved)
