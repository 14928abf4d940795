-- name: prune_originals
-- Deletes up to $2 thumbs.originals rows that no worker confirmed for $1 seconds; returns how many.
-- The caller repeats it until it deletes less than a batch: short transactions, few locks.
-- params: older_than_seconds float8, batch_size int
-- returns: deleted int
-- deadline: batch
SELECT thumbs.prune_originals(make_interval(secs => $1::float8), $2::int) AS deleted
