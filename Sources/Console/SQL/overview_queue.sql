-- name: overview_queue
-- The overview's live counts: queued, of those due now (ready), running, and how long the oldest due
-- job has waited. Only the partial indexes of the live states are read (jobs_ready_idx,
-- jobs_running_idx), never the finished rows the table holds until retention deletes them.
-- params: none
-- returns: queued bigint, ready bigint, running bigint, oldest_ready_seconds float8
-- deadline: quick
SELECT q.queued, q.ready,
       (SELECT count(*) FROM thumbs.jobs WHERE state = 'running') AS running,
       coalesce(extract(epoch FROM now() - q.oldest_ready), 0)::float8 AS oldest_ready_seconds
  FROM (SELECT count(*) AS queued,
               count(*) FILTER (WHERE run_at <= now()) AS ready,
               min(run_at) FILTER (WHERE run_at <= now()) AS oldest_ready
          FROM thumbs.jobs
         WHERE state = 'queued') q
