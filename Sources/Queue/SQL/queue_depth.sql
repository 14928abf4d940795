-- name: queue_depth
-- The live part of the queue, for metrics and readiness: jobs queued, of those the ones due now
-- (ready), jobs running, and how long the oldest ready job has been due (0 when none is).
--
-- It runs every few seconds on every worker, while thumbs.jobs may hold millions of finished rows
-- until retention deletes them. So it reads only the partial indexes of the live states: one scan of
-- jobs_ready_idx (state = 'queued', which holds run_at) gives queued, ready and the oldest run_at, and
-- jobs_running_idx (state = 'running') gives running. Finished jobs are not counted: that would read
-- every finished row (thumbs.queue_overview does, for people who ask).
--
-- gc_backlog: objects collection still has to decide on or delete (migrations/0013), from the partial
-- index of candidates.
-- params: none
-- returns: queued bigint, ready bigint, running bigint, oldest_ready_seconds float8, gc_backlog bigint
-- deadline: quick
WITH queued AS (
  SELECT count(*) AS queued,
         count(*) FILTER (WHERE run_at <= now()) AS ready,
         min(run_at) FILTER (WHERE run_at <= now()) AS oldest_ready
    FROM thumbs.jobs
   WHERE state = 'queued')
SELECT q.queued, q.ready,
       (SELECT count(*) FROM thumbs.jobs WHERE state = 'running') AS running,
       coalesce(extract(epoch FROM now() - q.oldest_ready), 0)::float8 AS oldest_ready_seconds,
       (SELECT count(*) FROM thumbs.gc_objects g WHERE g.state IS NOT NULL) AS gc_backlog
  FROM queued q
