-- 0005: identical originals render once.
--
-- Photo products receive the same photo at many URLs (shares, re-uploads). A job's render key is the
-- SHA-256 of what decides its output: the original's bytes (their SHA-256), the profile's spec, the
-- storage the objects went to, and the renderer's output version. A job whose key matches a job that
-- already succeeded takes that job's variant rows (the objects exist: content-addressed keys) without
-- decoding anything, and names the job it took them from in reused_from.
ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS render_key text;
ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS reused_from bigint;

COMMENT ON COLUMN thumbs.jobs.render_key IS
  'SHA-256 of (original bytes'' SHA-256, profile spec, storage, renderer version), set when the job succeeds';
COMMENT ON COLUMN thumbs.jobs.reused_from IS
  'The succeeded job whose variants this job took (same render key): nothing was decoded for it';

-- Only succeeded jobs are looked up, newest first. Built inside the migration's transaction (not
-- CONCURRENTLY): on a very large jobs table, run this migration at a quiet time (docs/operations.md).
CREATE INDEX IF NOT EXISTS jobs_render_key_idx ON thumbs.jobs (render_key, id DESC)
  WHERE state = 'succeeded' AND render_key IS NOT NULL;
