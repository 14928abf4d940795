-- name: status_queue
-- `thumbd status`: one row per state, with the age of its oldest job to the second ('-' when none).
-- params: none
-- returns: state text, jobs bigint, oldest text?
-- deadline: none
SELECT state, jobs, coalesce(date_trunc('second', oldest_age)::text, '-') AS oldest
  FROM thumbs.queue_overview
