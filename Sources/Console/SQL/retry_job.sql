-- name: retry_job
-- The Retry button: thumbs.retry (a failed or cancelled job back in the queue, due now).
-- params: id bigint
-- returns: done bool
-- deadline: quick
SELECT thumbs.retry(@id) AS done
