-- name: rescue_expired_jobs
-- Returns jobs whose lease expired (their worker died or froze) to the queue, or fails them when they
-- have used all their attempts. Safe from every worker at once: SKIP LOCKED keeps two rescuers off the
-- same row, and the state/expiry condition is re-checked under the row lock.
--
-- notified: wakes idle workers when something was requeued. The uncorrelated subquery runs once, on
-- the first row, so the statement sends one thumbs_jobs notification when it returns any row and none
-- otherwise. Jobs that fail for good get their `failed` event (migrations/0010), announced on
-- thumbs_events the same way.
-- params: none
-- returns: id bigint, notified bigint
-- deadline: batch
WITH expired AS (
  SELECT id FROM thumbs.jobs
   WHERE state = 'running' AND lease_expires_at < now()
   ORDER BY id
   FOR UPDATE SKIP LOCKED),
rescued AS (
  UPDATE thumbs.jobs j
     SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'failed' ELSE 'queued' END,
         finished_at = CASE WHEN j.attempts >= j.max_attempts THEN now() END,
         run_at = now(), error_code = 'lease_expired',
         last_error = 'lease expired while running on ' || coalesce(j.leased_by, 'an unknown worker'),
         lease_token = NULL, lease_expires_at = NULL,
         attempt_log = thumbs.append_attempt(j.attempt_log, jsonb_build_object(
           'attempt', j.attempts, 'worker', j.leased_by, 'started_at', j.started_at, 'ended_at', now(),
           'outcome', 'lease_expired', 'error_code', 'lease_expired',
           'error', 'lease expired: the worker stopped heartbeating'))
    FROM expired
   WHERE j.id = expired.id AND j.state = 'running' AND j.lease_expires_at < now()
  RETURNING j.id, j.state, j.external_id, j.source_url, j.profile, j.error_code, j.last_error, j.attempts,
            j.rerender, j.metadata),
events AS (
  INSERT INTO thumbs.event_log (job_id, external_id, kind, source_url, profile, error_code, error,
                                attempts, rerender, metadata)
  SELECT r.id, r.external_id, 'failed', thumbs.redact_url(r.source_url), r.profile,
         r.error_code, r.last_error, r.attempts, r.rerender, r.metadata
    FROM rescued r WHERE r.state = 'failed'
   ORDER BY r.id
  RETURNING id)
SELECT id,
       (SELECT count(*) FROM (SELECT pg_notify('thumbs_jobs', '')) n)
         + (SELECT count(pg_notify('thumbs_events', e.id::text)) FROM events e) AS notified
  FROM rescued
