-- name: prune_jobs
-- Deletes up to @batch_size jobs that finished more than @older_than_seconds seconds ago (their variant rows go by cascade);
-- returns how many. The caller repeats it until it deletes less than a batch: short transactions,
-- few locks.
-- params: older_than_seconds float8, batch_size int
-- returns: deleted int
-- deadline: batch
SELECT thumbs.prune(make_interval(secs => @older_than_seconds::float8), @batch_size::int) AS deleted
