-- name: fail_jobs
-- Failed attempts: each job goes back to queued after its own delay (@retry_after, in seconds), or to failed for
-- good when its delay is NULL; either way the attempt is appended to the job's attempt log. A job whose
-- @deferred is true gets its attempt back (the failure was the worker's configuration, not the job's: it
-- must not use up max_attempts). Returns the ids written; a job missing from the answer lost its lease.
--
-- Fencing, lock order and lookup by id as in heartbeat_jobs: only rows still running under the caller's
-- lease_token, locked in id order.
--
-- A job that fails for good gets its `failed` event (migrations/0010), announced on thumbs_events;
-- notified counts the announcements (evaluated once, on the first row). @media: what the original was
-- when the attempt learnt it was a video (its header was read), kept on the job and in its event.
-- params: ids bigint[], tokens uuid[], retry_after float8?[], codes text[], messages text[],
-- params: deferred bool[], media jsonb?[]
-- returns: id bigint, notified bigint
-- deadline: batch
WITH input AS MATERIALIZED (
  SELECT * FROM unnest(@ids::bigint[], @tokens::uuid[], @retry_after::float8[], @codes::text[],
                       @messages::text[], @deferred::bool[], @media::jsonb[])
           AS t(id, token, retry_after, code, message, deferred, media)
   ORDER BY id),
locked AS MATERIALIZED (
  SELECT i.* FROM input i CROSS JOIN LATERAL (
    SELECT FROM thumbs.jobs j
     WHERE j.id = i.id AND j.lease_token = i.token AND j.state = 'running'
       FOR UPDATE OF j OFFSET 0) held),
written AS (
UPDATE thumbs.jobs j
   SET state = CASE WHEN i.retry_after IS NULL THEN 'failed' ELSE 'queued' END,
       run_at = CASE WHEN i.retry_after IS NULL THEN j.run_at
                     ELSE now() + make_interval(secs => i.retry_after) END,
       finished_at = CASE WHEN i.retry_after IS NULL THEN now() END,
       attempts = CASE WHEN i.deferred THEN greatest(j.attempts - 1, 0) ELSE j.attempts END,
       error_code = i.code, last_error = i.message, lease_token = NULL, lease_expires_at = NULL,
       media = coalesce(i.media, j.media),
       attempt_log = thumbs.append_attempt(j.attempt_log, jsonb_build_object(
         'attempt', j.attempts, 'worker', j.leased_by, 'started_at', j.started_at, 'ended_at', now(),
         'outcome', CASE WHEN i.retry_after IS NULL THEN 'failed' WHEN i.deferred THEN 'deferred'
                         ELSE 'retry' END,
         'error_code', i.code, 'error', i.message))
  FROM locked i
 WHERE j.id = i.id
RETURNING j.id, j.external_id, j.source_url, j.profile, j.state, j.error_code, j.last_error, j.attempts,
          j.rerender, j.metadata, j.media),
events AS (
  INSERT INTO thumbs.event_log (job_id, external_id, kind, source_url, profile, error_code, error,
                                attempts, rerender, metadata, media)
  SELECT w.id, w.external_id, 'failed', thumbs.redact_url(w.source_url), w.profile,
         w.error_code, w.last_error, w.attempts, w.rerender, w.metadata, w.media
    FROM written w WHERE w.state = 'failed'
   ORDER BY w.id
  RETURNING id)
SELECT w.id, (SELECT count(pg_notify('thumbs_events', e.id::text)) FROM events e) AS notified
  FROM written w
