-- name: promote_due_jobs
-- Queued jobs whose run_at has come (a retry's backoff over, a scheduled job's time) get their turn
-- (migrations/0019): touching run_at lets the jobs_take_turn_update trigger place each at the end of its
-- owner's line. Every worker runs it about once a second; SKIP LOCKED keeps two off the same rows. At
-- most 1,000 at a time, the longest due first (a constant, not a parameter: so the statement's plan is
-- made once, not for every run). When any were promoted, one thumbs_jobs notification wakes
-- idle workers (the uncorrelated subquery runs once, and only then).
-- params: none
-- returns: promoted bigint, notified bigint
-- deadline: quick
WITH due AS (
  SELECT id FROM thumbs.jobs
   WHERE state = 'queued' AND turn IS NULL AND run_at <= now()
   ORDER BY run_at
   LIMIT 1000
   FOR UPDATE SKIP LOCKED),
promoted AS (
  UPDATE thumbs.jobs j SET run_at = j.run_at
    FROM due
   WHERE j.id = due.id AND j.state = 'queued' AND j.turn IS NULL
  RETURNING j.id)
SELECT count(*) AS promoted,
       CASE WHEN count(*) > 0 THEN (SELECT count(*) FROM (SELECT pg_notify('thumbs_jobs', '')) n) ELSE 0 END
         AS notified
  FROM promoted
