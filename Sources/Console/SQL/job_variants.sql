-- name: job_variants
-- The thumbnails a succeeded job made, in the profile's order of names as stored.
-- params: job_id bigint
-- returns: name text, width int, height int, format text, bytes bigint, storage_key text
-- deadline: quick
SELECT name, width, height, format, bytes, storage_key
  FROM thumbs.variants
 WHERE job_id = @job_id
 ORDER BY width * height DESC, name
