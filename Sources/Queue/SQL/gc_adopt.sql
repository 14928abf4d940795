-- name: gc_adopt
-- Makes orphans (found in storage, named by nothing) collection candidates, due at once: they are
-- older than the grace already. Collection still checks, under its fence, that nothing names them.
-- params: storage_keys text[], grace_seconds float8
-- returns: adopted bigint
WITH adopted AS (
  INSERT INTO thumbs.gc_objects AS g (storage_key, state, reason, queued_at)
  SELECT DISTINCT k, 'pending', 'orphan', now() - make_interval(secs => $2::float8)
    FROM unnest($1::text[]) AS k
  ON CONFLICT (storage_key) DO UPDATE
     SET state = 'pending', reason = 'orphan', queued_at = excluded.queued_at, fenced_at = NULL
   WHERE g.state IS NULL
  RETURNING 1)
SELECT count(*) AS adopted FROM adopted
