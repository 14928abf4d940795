-- name: gc_unclaimed
-- Objects a job uploaded whose success was not recorded (its lease lost, its photo forgotten, or
-- refused because collection was deleting one of its objects) become collection candidates: they may
-- have been stored for nothing. Collection keeps whatever something names meanwhile.
-- params: storage_keys text[]
-- returns: added bigint
WITH added AS (
  INSERT INTO thumbs.gc_objects AS g (storage_key, state, reason)
  SELECT DISTINCT k, 'pending', 'unclaimed' FROM unnest($1::text[]) AS k
  ON CONFLICT (storage_key) DO UPDATE
     SET state = 'pending', queued_at = now(), reason = 'unclaimed', fenced_at = NULL
   WHERE g.state IS NULL
  RETURNING 1)
SELECT count(*) AS added FROM added
