-- name: gc_failed
-- The storage did not delete these objects: they stay marked (a completion naming them is still
-- refused), claimable again after their delay, with the storage's error.
-- params: storage_keys text[], errors text[], retry_after float8[]
-- returns: failed bigint
-- deadline: batch
WITH input AS (
  SELECT * FROM unnest(@storage_keys::text[], @errors::text[], @retry_after::float8[])
           AS t(storage_key, error, retry_after)),
failed AS (
  UPDATE thumbs.gc_objects g
     SET claimed_by = NULL, claim_expires_at = now() + make_interval(secs => i.retry_after),
         last_error = i.error
    FROM input i
   WHERE g.storage_key = i.storage_key AND g.state = 'deleting'
  RETURNING 1)
SELECT count(*) AS failed FROM failed
