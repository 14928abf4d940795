-- name: gc_candidates
-- What collection has to do, for `thumbd gc --dry-run`: every candidate and marked object, oldest
-- first, with how long it has waited, whether something live names it now (it would be kept), and the
-- storage's last error for a delete that failed.
-- params: limit bigint
-- returns: storage_key text, state text, reason text?, age_seconds float8, named bool, attempts int,
-- returns: last_error text?
-- deadline: none
SELECT g.storage_key, g.state, g.reason, extract(epoch FROM now() - g.queued_at)::float8 AS age_seconds,
       thumbs.object_is_named(g.storage_key) AS named, g.attempts, g.last_error
  FROM thumbs.gc_objects g
 WHERE g.state IS NOT NULL
 ORDER BY g.queued_at, g.storage_key
 LIMIT @limit
