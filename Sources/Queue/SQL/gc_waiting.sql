-- name: gc_waiting
-- Marked objects no collector holds: what a pass waits for while jobs leased before the fence still
-- run (those whose delete failed wait for their retry time instead, and are not counted).
-- params: none
-- returns: waiting bigint
-- deadline: quick
SELECT count(*) AS waiting FROM thumbs.gc_objects g
 WHERE g.state = 'deleting' AND (g.claim_expires_at IS NULL OR g.claim_expires_at < now())
