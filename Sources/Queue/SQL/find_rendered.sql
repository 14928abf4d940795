-- name: find_rendered
-- The current thumbnails (migrations/0009) rendered with this render key, with their ThumbHash, the
-- job that made them and its warnings (none when its row was pruned): what a job with the same original bytes and profile can take instead of
-- rendering. Only current thumbnails are offered, so every object a job takes is one a photo names.
-- No rows: none.
-- params: render_key text
-- returns: job_id bigint, thumbhash text?, name text, width int, height int, format text, bytes bigint,
-- returns: storage_key text, warnings jsonb?, media jsonb?
-- deadline: quick
WITH source AS (
  SELECT p.id, p.job_id, p.thumbhash FROM thumbs.photos p
   WHERE p.render_key = @render_key
   ORDER BY p.job_id DESC
   LIMIT 1)
SELECT s.job_id, s.thumbhash, v.name, v.width, v.height, v.format, v.bytes, v.storage_key, j.warnings, j.media
  FROM source s JOIN thumbs.photo_variants v ON v.photo_id = s.id
  LEFT JOIN thumbs.jobs j ON j.id = s.job_id
 ORDER BY v.name
