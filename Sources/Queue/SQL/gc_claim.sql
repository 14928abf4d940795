-- name: gc_claim
-- Claims up to @batch_size objects to delete from storage, for @claim_seconds seconds (a collector killed meanwhile leaves
-- them to the next one when the claim runs out): objects marked deleting and fenced before every
-- running job was leased. Every job leased before the fence has ended, so its outcome is visible here:
-- an object it named is kept (the mark is dropped), as are the keys of the erasures waiting on it.
-- Nothing is claimed while a worker that does not refuse completions naming marked objects (an older
-- release) is registered or runs a job unregistered.
-- params: worker text, batch_size bigint, claim_seconds float8
-- returns: storage_key text
-- deadline: batch
WITH oldest_running AS MATERIALIZED (
  SELECT coalesce(min(j.started_at), 'infinity'::timestamptz) AS started_at
    FROM thumbs.jobs j WHERE j.state = 'running'),
unfenced AS MATERIALIZED (
  SELECT EXISTS (SELECT 1 FROM thumbs.workers w WHERE NOT w.fences_collection)
      OR EXISTS (SELECT 1 FROM thumbs.jobs j
                  WHERE j.state = 'running'
                    AND NOT EXISTS (SELECT 1 FROM thumbs.workers w WHERE w.id = j.leased_by)) AS blocked),
ready AS MATERIALIZED (
  SELECT g.storage_key FROM thumbs.gc_objects g, oldest_running o, unfenced u
   WHERE g.state = 'deleting' AND g.fenced_at < o.started_at AND NOT u.blocked
     AND (g.claim_expires_at IS NULL OR g.claim_expires_at < now())
   ORDER BY g.fenced_at
   LIMIT @batch_size
   FOR UPDATE OF g SKIP LOCKED),
judged AS MATERIALIZED (
  SELECT r.storage_key, thumbs.object_is_named(r.storage_key) AS named FROM ready r),
changed AS (
  UPDATE thumbs.gc_objects g
     SET state = CASE WHEN j.named THEN NULL ELSE 'deleting' END,
         claimed_by = CASE WHEN j.named THEN NULL ELSE @worker END,
         claim_expires_at = CASE WHEN j.named THEN NULL
                                 ELSE now() + make_interval(secs => @claim_seconds::float8) END,
         attempts = g.attempts + CASE WHEN j.named THEN 0 ELSE 1 END
    FROM judged j
   WHERE g.storage_key = j.storage_key
  RETURNING g.storage_key, j.named),
kept AS (
  UPDATE thumbs.erasure_keys k SET outcome = 'kept'
   WHERE k.outcome IS NULL AND k.storage_key IN (SELECT c.storage_key FROM changed c WHERE c.named))
SELECT c.storage_key FROM changed c WHERE NOT c.named ORDER BY c.storage_key
