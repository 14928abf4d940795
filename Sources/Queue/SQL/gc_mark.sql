-- name: gc_mark
-- The first phase of collection (migrations/0013): candidates whose grace (@grace_seconds seconds) has passed are
-- marked deleting, unless something live names them (then they are kept, and so are the keys of every
-- erasure waiting on them). Up to @batch_size candidates, taken with SKIP LOCKED: many collectors at once never
-- wait on each other.
-- params: grace_seconds float8, batch_size bigint
-- returns: marked bigint, kept bigint
-- deadline: batch
WITH due AS MATERIALIZED (
  SELECT g.storage_key FROM thumbs.gc_objects g
   WHERE g.state = 'pending' AND g.queued_at <= now() - make_interval(secs => @grace_seconds::float8)
   ORDER BY g.queued_at
   LIMIT @batch_size
   FOR UPDATE SKIP LOCKED),
judged AS MATERIALIZED (
  SELECT d.storage_key, thumbs.object_is_named(d.storage_key) AS named FROM due d),
changed AS (
  UPDATE thumbs.gc_objects g
     SET state = CASE WHEN j.named THEN NULL ELSE 'deleting' END, fenced_at = NULL, claimed_by = NULL,
         claim_expires_at = NULL
    FROM judged j
   WHERE g.storage_key = j.storage_key
  RETURNING g.storage_key, j.named),
kept AS (
  UPDATE thumbs.erasure_keys k SET outcome = 'kept'
   WHERE k.outcome IS NULL AND k.storage_key IN (SELECT c.storage_key FROM changed c WHERE c.named))
SELECT count(*) FILTER (WHERE NOT c.named) AS marked, count(*) FILTER (WHERE c.named) AS kept
  FROM changed c
