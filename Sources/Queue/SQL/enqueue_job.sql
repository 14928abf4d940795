-- name: enqueue_job
-- thumbs.enqueue: the new job's id, or the id of the job that already stands for the same photo (its
-- external id, else its source) and profile.
-- params: source_url text, profile text, priority int, external_id text?, owner text?
-- returns: id bigint
-- deadline: quick
SELECT thumbs.enqueue($1, $2, $3::int, external_id => $4, owner => $5) AS id
