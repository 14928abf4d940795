-- thumbd schema, version 3: one row per original URL a worker downloaded (docs/fetching.md).
-- Applied by `thumbd migrate` in one transaction.

-- What the origin served at each URL, as of the last time a worker asked: for admins ("how big are the
-- originals?", "which URLs changed?"), and the ETag / Last-Modified a conditional request sends.
-- Written once per download (not once per job), by the worker that downloaded it.
CREATE TABLE thumbs.originals (
  url               text PRIMARY KEY,
  bytes             bigint NOT NULL,
  sha256            text NOT NULL,
  content_type      text,
  etag              text,
  last_modified     text,
  -- From the file's header; NULL when the format is not one thumbd can size without decoding.
  format            text,
  width             int,
  height            int,
  first_fetched_at  timestamptz NOT NULL DEFAULT now(),
  -- The last full download, and the last time the origin confirmed the copy (download or 304).
  fetched_at        timestamptz NOT NULL DEFAULT now(),
  checked_at        timestamptz NOT NULL DEFAULT now(),
  downloads         bigint NOT NULL DEFAULT 1,
  revalidations     bigint NOT NULL DEFAULT 0,
  fetched_by        text
);

CREATE INDEX originals_checked_idx ON thumbs.originals (checked_at);

-- Rows no worker has confirmed for `older_than` go, `batch_size` at a time (the worker's retention
-- housekeeping calls it with the same age as thumbs.prune).
CREATE FUNCTION thumbs.prune_originals(older_than interval DEFAULT '7 days', batch_size int DEFAULT 1000)
RETURNS int
LANGUAGE sql AS $$
  WITH doomed AS (
    SELECT url FROM thumbs.originals
     WHERE checked_at < now() - older_than
     ORDER BY checked_at
     LIMIT batch_size
     FOR UPDATE SKIP LOCKED),
  deleted AS (
    DELETE FROM thumbs.originals o USING doomed WHERE o.url = doomed.url RETURNING 1)
  SELECT count(*)::int FROM deleted;
$$;
