-- name: find_rendered
-- The variants of the newest succeeded job with this render key (migrations/0005), with its ThumbHash:
-- what a job with the same original bytes and profile can take instead of rendering. No rows: none.
-- params: render_key text
-- returns: job_id bigint, thumbhash text?, name text, width int, height int, format text, bytes bigint,
-- returns: storage_key text
WITH source AS (
  SELECT j.id, j.thumbhash FROM thumbs.jobs j
   WHERE j.render_key = $1 AND j.state = 'succeeded'
   ORDER BY j.id DESC
   LIMIT 1)
SELECT s.id AS job_id, s.thumbhash, v.name, v.width, v.height, v.format, v.bytes, v.storage_key
  FROM source s JOIN thumbs.variants v ON v.job_id = s.id
 ORDER BY v.name
