-- bench/ops-bigtable.sql: what a week of finished jobs costs the queue and the admin views, for
-- docs/operations.md ("Big tables: retention, not partitioning"). Run on a THROWAWAY database
-- migrated by `thumbd migrate` (it fills thumbs.jobs with a million rows and leaves them there):
--
--   psql "$SCRATCH_URL" -X -f bench/ops-bigtable.sql
\set QUIET on
-- A million succeeded jobs spread over the last 7 days, 4 variants each, and 1,000 queued jobs.
INSERT INTO thumbs.jobs (source_url, profile, state, attempts, created_at, started_at, finished_at, run_at)
SELECT 'https://cdn.example.com/u/' || g || '.jpg', 'default', 'succeeded', 1,
       now() - (g % 604800) * interval '1 second', now() - (g % 604800) * interval '1 second',
       now() - (g % 604800) * interval '1 second' + interval '0.3 s', now() - (g % 604800) * interval '1 second'
  FROM generate_series(1, 1000000) g;
INSERT INTO thumbs.variants (job_id, name, width, height, format, bytes, storage_key)
SELECT id, v, 100, 100, 'jpeg', 10000, md5(id::text || v)
  FROM thumbs.jobs, unnest(ARRAY['large', 'medium', 'small', 'square']) v;
SELECT count(thumbs.enqueue('https://cdn.example.com/new/' || g || '.jpg')) FROM generate_series(1, 1000) g;
VACUUM ANALYZE thumbs.jobs;
VACUUM ANALYZE thumbs.variants;
\set QUIET off
SELECT pg_size_pretty(pg_total_relation_size('thumbs.jobs')) AS jobs,
       pg_size_pretty(pg_total_relation_size('thumbs.variants')) AS variants;
\timing on
-- The lease's pick (the first CTE of Sources/Queue/SQL/lease_jobs.sql), rolled back.
BEGIN;
EXPLAIN (ANALYZE, COSTS OFF)
SELECT id, source_url, shares_source FROM thumbs.jobs
 WHERE state = 'queued' AND run_at <= now()
 ORDER BY priority DESC, run_at, id LIMIT 2 FOR UPDATE SKIP LOCKED;
ROLLBACK;
-- What every worker samples every 5 s for /metrics (Sources/Queue/SQL/queue_depth.sql).
\ir ../Sources/Queue/SQL/queue_depth.sql
;
-- The admin overview (also `thumbd status`): it counts the finished jobs too.
SELECT * FROM thumbs.queue_overview;
-- One retention batch (the jobs of the oldest day).
SELECT thumbs.prune('6 days', 1000);
