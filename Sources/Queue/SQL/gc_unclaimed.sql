-- name: gc_unclaimed
-- Objects a job uploaded whose success was not recorded (its lease lost, its photo forgotten, or
-- refused because collection was deleting one of its objects) become collection candidates: they may
-- have been stored for nothing. Collection keeps whatever something names meanwhile.
-- params: storage_keys text[]
-- returns: added bigint
-- deadline: batch
SELECT thumbs.add_gc_candidates(@storage_keys::text[], 'unclaimed') AS added
