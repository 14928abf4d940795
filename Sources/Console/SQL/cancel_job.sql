-- name: cancel_job
-- The Cancel button: thumbs.cancel (a queued or running job; its cancelled event is written).
-- params: id bigint
-- returns: done bool
-- deadline: quick
SELECT thumbs.cancel(@id) AS done
