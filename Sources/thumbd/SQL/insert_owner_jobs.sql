-- name: insert_owner_jobs
-- `thumbd bench lease`: $1 queued no-op jobs, spread over $3 owners named $2 followed by a number
-- (the jobs_take_turn trigger gives each its place in line, as for any insert).
-- params: jobs int, owner_prefix text, owners int
-- returns: none
INSERT INTO thumbs.jobs (source_url, profile, owner)
SELECT 'bench://lease/' || $2::text || '/' || g, 'default', $2::text || (g % $3::int)
  FROM generate_series(1, $1::int) AS g
