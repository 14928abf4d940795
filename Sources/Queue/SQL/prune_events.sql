-- name: prune_events
-- Deletes completion events older than @older_than_seconds seconds, among the @batch_size oldest; returns how many. The caller
-- repeats it until it deletes less than a batch: short transactions, few locks.
-- params: older_than_seconds float8, batch_size int
-- returns: deleted int
-- deadline: batch
SELECT thumbs.prune_events(make_interval(secs => @older_than_seconds::float8), @batch_size::int) AS deleted
