-- name: insert_jobs
-- `thumbd bench queue`: @jobs queued no-op jobs, inserted directly (not through thumbs.enqueue: no
-- notifications, no sibling marks).
-- params: jobs int
-- returns: none
INSERT INTO thumbs.jobs (source_url, profile)
SELECT 'bench://noop/' || g, 'default' FROM generate_series(1, @jobs::int) AS g
