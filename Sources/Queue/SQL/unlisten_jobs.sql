-- name: unlisten_jobs
-- Ends the listener's subscription to thumbs_jobs while its worker needs no wake-up (every lease comes
-- back full): PostgreSQL wakes every listening backend of the database at each commit that notifies,
-- whatever the channel, so a busy fleet that keeps listening pays for each event of every job.
-- params: none
-- returns: none
-- deadline: quick
UNLISTEN thumbs_jobs
