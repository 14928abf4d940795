-- name: analyze_jobs
-- `thumbd bench queue`: statistics that know about the jobs just inserted, so the lease is planned
-- for a full queue.
-- params: none
-- returns: none
ANALYZE thumbs.jobs
