-- name: retry_error_code
-- "Retry all" on the overview: thumbs.retry for every job that failed for good with @error_code (the
-- partial index of error codes finds them), up to @limit at a time. How many went back to the queue.
-- params: error_code text, limit bigint
-- returns: retried bigint
-- deadline: batch
SELECT count(*) FILTER (WHERE thumbs.retry(j.id)) AS retried
  FROM (SELECT id FROM thumbs.jobs
         WHERE error_code = @error_code AND state = 'failed'
         ORDER BY id
         LIMIT @limit) j
