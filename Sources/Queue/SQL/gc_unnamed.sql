-- name: gc_unnamed
-- Of the storage keys given (a page of a storage listing), those nothing names: no current thumbnail,
-- no job's variant, and not already a candidate. `thumbd gc` calls them orphans (an upload whose job
-- never recorded it: a crash between the two).
-- params: storage_keys text[]
-- returns: storage_key text
-- deadline: batch
SELECT k.storage_key
  FROM unnest(@storage_keys::text[]) AS k(storage_key)
 WHERE NOT thumbs.object_is_named(k.storage_key)
   AND NOT EXISTS (SELECT 1 FROM thumbs.gc_objects g
                    WHERE g.storage_key = k.storage_key AND g.state IS NOT NULL)
 ORDER BY k.storage_key
