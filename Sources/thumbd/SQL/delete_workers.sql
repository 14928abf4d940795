-- name: delete_workers
-- `thumbd bench`: forgets the workers of earlier runs.
-- params: none
-- returns: none
DELETE FROM thumbs.workers
