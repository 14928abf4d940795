-- name: overview_failures
-- Jobs that failed for good in the last hour, by error code, the most frequent first: the overview's
-- failure chart. The same range of jobs_finished_idx as overview_minutes.
-- params: none
-- returns: error_code text, jobs bigint
-- deadline: quick
SELECT coalesce(error_code, 'unknown') AS error_code, count(*) AS jobs
  FROM thumbs.jobs
 WHERE state IN ('succeeded', 'failed', 'cancelled', 'forgotten')
   AND finished_at >= date_trunc('minute', now()) - interval '59 minutes'
   AND state = 'failed'
 GROUP BY 1
 ORDER BY 2 DESC, 1
 LIMIT 12
