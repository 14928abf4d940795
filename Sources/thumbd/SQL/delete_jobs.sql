-- name: delete_jobs
-- `thumbd bench`: deletes every bench job (before a run, and after it, so runs do not pile up).
-- params: none
-- returns: none
DELETE FROM thumbs.jobs WHERE source_url LIKE 'bench://%'
