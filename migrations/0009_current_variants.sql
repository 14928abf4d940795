-- 0009: a photo's current thumbnails, kept apart from the job history.
--
-- Retention deletes finished jobs (thumbs.prune) and with them their thumbs.variants rows; a backend
-- needs a photo's thumbnails for as long as the photo lives. thumbs.photos holds, per photo (its
-- external id, else its source's identity) and profile, the job whose thumbnails are current, and
-- thumbs.photo_variants a copy of that job's variant rows. Retention never touches them; a newer
-- successful job of the photo replaces them. thumbs.current_variants is the backend's read path, and
-- render reuse reads the same rows (so a reused object is always one a current thumbnail names).
--
-- The worker's completion statement (complete_jobs.sql) writes them in the same statement as the job's
-- success. Runs again unchanged on a schema that already has it.

CREATE TABLE IF NOT EXISTS thumbs.photos (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  external_id  text,
  -- The identity of the source URL the current thumbnails were rendered from (no presigned signature).
  source_url   text NOT NULL,
  profile      text NOT NULL,
  -- The job that rendered them (or took them by render key). No foreign key: the job may be pruned.
  job_id       bigint NOT NULL,
  render_key   text,
  thumbhash    text,
  updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX IF NOT EXISTS photos_external_idx ON thumbs.photos (external_id, profile)
  WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS photos_source_idx ON thumbs.photos (source_url, profile)
  WHERE external_id IS NULL;
CREATE INDEX IF NOT EXISTS photos_render_key_idx ON thumbs.photos (render_key, job_id DESC)
  WHERE render_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS thumbs.photo_variants (
  photo_id     bigint NOT NULL REFERENCES thumbs.photos (id) ON DELETE CASCADE,
  name         text NOT NULL,
  width        int NOT NULL,
  height       int NOT NULL,
  format       text NOT NULL,
  bytes        bigint NOT NULL,
  storage_key  text NOT NULL,
  PRIMARY KEY (photo_id, name)
);

CREATE OR REPLACE VIEW thumbs.current_variants AS
SELECT p.external_id, p.source_url, p.profile, p.job_id, v.name, v.width, v.height, v.format, v.bytes,
       v.storage_key, p.thumbhash, p.updated_at
  FROM thumbs.photos p JOIN thumbs.photo_variants v ON v.photo_id = p.id;

-- What older jobs name: each photo's newest succeeded job, once (not again when this runs again).
INSERT INTO thumbs.photos (external_id, source_url, profile, job_id, render_key, thumbhash, updated_at)
SELECT DISTINCT ON (j.external_id, CASE WHEN j.external_id IS NULL THEN j.source_key END, j.profile)
       j.external_id, j.source_key, j.profile, j.id, j.render_key, j.thumbhash, coalesce(j.finished_at, now())
  FROM thumbs.jobs j
 WHERE j.state = 'succeeded'
   AND NOT EXISTS (SELECT 1 FROM thumbs.photos)
 ORDER BY j.external_id, CASE WHEN j.external_id IS NULL THEN j.source_key END, j.profile, j.id DESC;
INSERT INTO thumbs.photo_variants (photo_id, name, width, height, format, bytes, storage_key)
SELECT p.id, v.name, v.width, v.height, v.format, v.bytes, v.storage_key
  FROM thumbs.photos p JOIN thumbs.variants v ON v.job_id = p.job_id
ON CONFLICT (photo_id, name) DO NOTHING;
