-- name: job_original
-- What thumbd knows of a job's original, by its source's identity (thumbs.originals' key).
-- params: source_key text
-- returns: bytes bigint, bytes_read bigint?, content_type text?, format text?, width int?, height int?
-- returns: sha256 text?, downloads bigint, revalidations bigint, fetched text, fetched_by text?
-- deadline: quick
SELECT bytes, bytes_read, content_type, format, width, height, sha256, downloads, revalidations,
       to_char(fetched_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS fetched, fetched_by
  FROM thumbs.originals
 WHERE url = thumbs.redact_url(@source_key)
