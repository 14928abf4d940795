-- name: overview_minutes
-- Jobs that reached a final state in each minute of the last hour, by state: the overview's
-- throughput chart and its totals. A range of jobs_finished_idx: an hour's rows, whatever the table
-- holds. Minutes without any are absent (the page draws them as zero).
-- params: none
-- returns: minute_ago int, succeeded bigint, failed bigint, cancelled bigint
-- deadline: quick
SELECT (extract(epoch FROM date_trunc('minute', now()) - date_trunc('minute', finished_at)) / 60)::int
         AS minute_ago,
       count(*) FILTER (WHERE state = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE state = 'failed') AS failed,
       count(*) FILTER (WHERE state = 'cancelled') AS cancelled
  FROM thumbs.jobs
 WHERE state IN ('succeeded', 'failed', 'cancelled', 'forgotten')
   AND finished_at >= date_trunc('minute', now()) - interval '59 minutes'
 GROUP BY 1
 ORDER BY 1
