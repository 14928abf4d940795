-- bench/console-fill.sql: a big table for the console's pages (bench/console, ConsolePlansTests).
-- Run on a THROWAWAY database migrated by `thumbd migrate`, as a superuser (the triggers are skipped
-- while it fills: each row is written as the triggers would have left it):
--
--   psql "$SCRATCH_URL" -X -v jobs=1000000 -f bench/console-fill.sql
--
-- :jobs jobs over the last 30 days, the newest last, of 10,000 owners and three profiles: a third of
-- the newest 4.5% queued (some not yet due), the newest 200 running, 3% failed with one of five error codes (one of them
-- rare), 0.5% cancelled, 0.5% forgotten, the rest succeeded; 4 variants for each succeeded job of
-- every tenth, one event for each finished job of every tenth, a photo for each succeeded job of
-- every hundredth, an original for every tenth.
\set QUIET on
\if :{?jobs}
\else
\set jobs 1000000
\endif
SET session_replication_role = replica;
INSERT INTO thumbs.jobs (source_url, source_key, profile, state, attempts, owner, external_id, created_at,
                         run_at, started_at, finished_at, error_code, last_error, turn, leased_by,
                         lease_token, lease_expires_at, metadata)
SELECT url, CASE WHEN s = 'forgotten' THEN NULL ELSE url END,
       CASE WHEN g % 100 = 1 THEN 'banner' WHEN g % 10 = 2 THEN 'avatar' ELSE 'default' END,
       s, CASE WHEN s = 'queued' THEN 0 ELSE 1 END,
       'user-' || (g % 10000), CASE WHEN s = 'forgotten' THEN NULL ELSE 'photo-' || g END, at,
       CASE WHEN s = 'queued' AND g % 7 = 0 THEN now() + interval '1 hour' ELSE at END,
       CASE WHEN s <> 'queued' THEN at END,
       CASE WHEN s IN ('succeeded', 'failed', 'cancelled', 'forgotten') THEN at + interval '1 second' END,
       CASE WHEN s = 'failed' THEN (ARRAY['not_found', 'corrupt_image', 'timeout', 'unsupported_format',
                                          'too_large'])[1 + (g / 7) % 5] END,
       CASE WHEN s = 'failed' THEN 'GET ' || url || ' answered HTTP 404' END,
       CASE WHEN s = 'queued' AND g % 7 <> 0 THEN g END,
       CASE WHEN s = 'running' THEN 'bench-worker' END,
       CASE WHEN s = 'running' THEN gen_random_uuid() END,
       CASE WHEN s = 'running' THEN now() + interval '1 minute' END,
       CASE WHEN s = 'forgotten' THEN '{}' ELSE jsonb_build_object('album', 'a' || (g % 977)) END
  FROM (SELECT g, 'https://cdn.example.com/u/' || (g % 10000) || '/' || g || '.jpg' AS url,
               now() - interval '30 days' * (1 - g::float8 / :jobs) AS at,
               CASE WHEN g > :jobs - 200 THEN 'running'
                    WHEN g > :jobs * 0.955 AND g % 3 = 0 THEN 'queued'
                    WHEN g % 200 = 3 THEN 'cancelled'
                    WHEN g % 200 = 5 THEN 'forgotten'
                    WHEN g % 100 < 3 THEN 'failed'
                    ELSE 'succeeded' END AS s
          FROM generate_series(1, :jobs) g) j;
-- A rare error code: a handful of jobs among the million.
UPDATE thumbs.jobs SET error_code = 'storage_refused' WHERE id IN (1001, 250001, 500001) AND state = 'failed';
INSERT INTO thumbs.variants (job_id, name, width, height, format, bytes, storage_key)
SELECT id, v, 100, 75, 'jpeg', 10000, md5(id::text || v) || '.jpg'
  FROM thumbs.jobs, unnest(ARRAY['large', 'medium', 'small', 'square']) v
 WHERE state = 'succeeded' AND id % 10 = 0;
INSERT INTO thumbs.event_log (job_id, external_id, kind, source_url, profile, created_at, error_code)
SELECT id, external_id, state, source_url, profile, finished_at, error_code
  FROM thumbs.jobs
 WHERE state IN ('succeeded', 'failed', 'cancelled') AND id % 10 = 0;
INSERT INTO thumbs.photos (external_id, source_url, profile, job_id, updated_at)
SELECT external_id, source_url, profile, id, finished_at
  FROM thumbs.jobs
 WHERE state = 'succeeded' AND id % 100 = 50;
INSERT INTO thumbs.originals (url, bytes, sha256, content_type, format, width, height, fetched_by)
SELECT source_key, 2500000, md5(source_key), 'image/jpeg', 'jpeg', 4032, 3024, 'bench-worker'
  FROM thumbs.jobs
 WHERE source_key IS NOT NULL AND id % 10 = 0;
RESET session_replication_role;
VACUUM ANALYZE thumbs.jobs;
VACUUM ANALYZE thumbs.variants;
VACUUM ANALYZE thumbs.event_log;
VACUUM ANALYZE thumbs.photos;
VACUUM ANALYZE thumbs.originals;
\set QUIET off
SELECT state, count(*) FROM thumbs.jobs GROUP BY state ORDER BY state;
