-- name: record_original
-- Upserts the thumbs.originals row of a URL after a download (@revalidated false: counted as a download,
-- fetched_at moves) or after a 304 that confirmed the cached copy (@revalidated true: counted as a
-- revalidation). Either way checked_at moves, which is what prune_originals goes by. An original read by
-- ranges has no @sha256 but its @bytes_read and @index_sha256 (migrations/0022).
-- params: url text, bytes bigint, sha256 text?, content_type text?, etag text?, last_modified text?,
-- params: format text?, width int?, height int?, fetched_by text, revalidated bool, bytes_read bigint?,
-- params: index_sha256 text?
-- returns: none
-- deadline: quick
INSERT INTO thumbs.originals AS o
       (url, bytes, sha256, content_type, etag, last_modified, format, width, height, fetched_by,
        downloads, revalidations, bytes_read, index_sha256)
VALUES (@url, @bytes::bigint, @sha256, @content_type, @etag, @last_modified, @format, @width::int, @height::int,
        @fetched_by,
        CASE WHEN @revalidated::bool THEN 0 ELSE 1 END, CASE WHEN @revalidated::bool THEN 1 ELSE 0 END,
        @bytes_read::bigint, @index_sha256)
ON CONFLICT (url) DO UPDATE
   SET bytes = excluded.bytes, sha256 = excluded.sha256, content_type = excluded.content_type,
       etag = excluded.etag, last_modified = excluded.last_modified, format = excluded.format,
       width = excluded.width, height = excluded.height, fetched_by = excluded.fetched_by,
       bytes_read = excluded.bytes_read, index_sha256 = excluded.index_sha256,
       fetched_at = CASE WHEN @revalidated::bool THEN o.fetched_at ELSE now() END, checked_at = now(),
       downloads = o.downloads + excluded.downloads,
       revalidations = o.revalidations + excluded.revalidations
