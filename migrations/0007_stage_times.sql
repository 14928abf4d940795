-- 0007: where each succeeded job's time went.
--
-- The stage histograms on /metrics say how a worker's jobs do on the whole; stage_ms says it for one
-- job, in SQL, so that a slow job can be explained without its worker's logs: milliseconds per stage,
-- {"fetch": 412.5, "decode": 88.1, "resize": 20.3, "encode": 31.0, "store": 4.2}. A stage that did not
-- run for the job is absent (a job that took an earlier job's variants has only "fetch"). Jobs of the
-- same URL that shared one decode report the shared stages' times each.
ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS stage_ms jsonb;

COMMENT ON COLUMN thumbs.jobs.stage_ms IS
  'Milliseconds per stage of the attempt that succeeded (fetch, decode, resize, encode, store), set when the job succeeds';
