-- name: prune_originals
-- Deletes up to @batch_size thumbs.originals rows that no worker confirmed for @older_than_seconds seconds; returns how many.
-- The caller repeats it until it deletes less than a batch: short transactions, few locks.
-- params: older_than_seconds float8, batch_size int
-- returns: deleted int
-- deadline: batch
SELECT thumbs.prune_originals(make_interval(secs => @older_than_seconds::float8), @batch_size::int) AS deleted
