-- name: gc_deleted
-- The objects are gone from storage: they stop being candidates, keep the time of their deletion (a
-- completion of a job leased before it is refused), and the erasures waiting on them count them
-- deleted.
-- params: storage_keys text[]
-- returns: deleted bigint
-- deadline: batch
WITH done AS (
  UPDATE thumbs.gc_objects g
     SET state = NULL, deleted_at = now(), fenced_at = NULL, claimed_by = NULL, claim_expires_at = NULL,
         last_error = NULL
   WHERE g.storage_key = ANY (@storage_keys::text[]) AND g.state = 'deleting'
  RETURNING g.storage_key),
decided AS (
  UPDATE thumbs.erasure_keys k SET outcome = 'deleted'
   WHERE k.outcome IS NULL AND k.storage_key IN (SELECT d.storage_key FROM done d))
SELECT count(*) AS deleted FROM done
