-- name: live_jobs
-- `thumbd bench`: live jobs left once the bench jobs are gone; any means the database is not a
-- scratch database, and the bench refuses to run.
-- params: none
-- returns: jobs bigint
SELECT count(*) AS jobs FROM thumbs.jobs WHERE state IN ('queued', 'running')
