-- name: enqueue_job
-- thumbs.enqueue: the new job's id, or the id of the live job that already exists for the same
-- source and profile.
-- params: source_url text, profile text, priority int
-- returns: id bigint
SELECT thumbs.enqueue($1, $2, $3::int) AS id
