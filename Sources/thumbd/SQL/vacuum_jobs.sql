-- name: vacuum_jobs
-- `thumbd bench`: clears the dead rows of earlier runs and refreshes the statistics, so each run
-- starts from the same table.
-- params: none
-- returns: none
VACUUM ANALYZE thumbs.jobs
