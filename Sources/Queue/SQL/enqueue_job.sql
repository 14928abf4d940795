-- name: enqueue_job
-- thumbs.enqueue: the new job's id, or the id of the job that already stands for the same photo (its
-- external id, else its source) and profile.
-- params: source_url text, profile text, priority int, external_id text?, owner text?
-- returns: id bigint
-- deadline: quick
SELECT thumbs.enqueue(@source_url, @profile, @priority::int, external_id => @external_id, owner => @owner)
         AS id
