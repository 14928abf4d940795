-- name: newest_job
-- The newest job's id (the primary key's last entry), where a job list without an indexed filter
-- starts its window.
-- params: none
-- returns: id bigint?
-- deadline: quick
SELECT max(id) AS id FROM thumbs.jobs
