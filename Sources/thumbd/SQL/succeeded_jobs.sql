-- name: succeeded_jobs
-- `thumbd bench queue`: how many no-op jobs succeeded, checked against the workers' own count.
-- params: none
-- returns: jobs bigint
SELECT count(*) AS jobs FROM thumbs.jobs WHERE source_url LIKE 'bench://noop/%' AND state = 'succeeded'
