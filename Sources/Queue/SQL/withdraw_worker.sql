-- name: withdraw_worker
-- Removes a worker's thumbs.workers row at a clean exit.
-- params: worker_id text
-- returns: none
-- deadline: quick
DELETE FROM thumbs.workers WHERE id = @worker_id
