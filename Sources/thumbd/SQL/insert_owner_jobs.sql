-- name: insert_owner_jobs
-- `thumbd bench lease`: @jobs queued no-op jobs, spread over @owners owners named @owner_prefix followed by a number
-- (the jobs_take_turn trigger gives each its place in line, as for any insert).
-- params: jobs int, owner_prefix text, owners int
-- returns: none
INSERT INTO thumbs.jobs (source_url, profile, owner)
SELECT 'bench://lease/' || @owner_prefix::text || '/' || g, 'default',
       @owner_prefix::text || (g % @owners::int)
  FROM generate_series(1, @jobs::int) AS g
