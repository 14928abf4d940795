-- name: hand_back_jobs
-- Returns unfinished jobs to the queue without counting the attempt (a clean stop is not the job's
-- fault), logs the hand-back in the attempt log, and wakes idle workers to take them: the uncorrelated
-- notified subquery runs once, on the first row, so one thumbs_jobs notification goes out when any
-- job was handed back. Returns the ids written; a job missing from the answer lost its lease.
--
-- Fencing, lock order and lookup by id as in heartbeat_jobs: only rows still running under the caller's
-- lease_token, locked in id order.
-- params: ids bigint[], tokens uuid[]
-- returns: id bigint, notified bigint
-- deadline: batch
WITH input AS MATERIALIZED (
  SELECT * FROM unnest(@ids::bigint[], @tokens::uuid[]) AS t(id, token) ORDER BY id),
locked AS MATERIALIZED (
  SELECT i.id FROM input i CROSS JOIN LATERAL (
    SELECT FROM thumbs.jobs j
     WHERE j.id = i.id AND j.lease_token = i.token AND j.state = 'running'
       FOR UPDATE OF j OFFSET 0) held),
returned AS (
  UPDATE thumbs.jobs j
     SET state = 'queued', attempts = greatest(j.attempts - 1, 0), run_at = now(), started_at = NULL,
         lease_token = NULL, lease_expires_at = NULL,
         attempt_log = thumbs.append_attempt(j.attempt_log, jsonb_build_object(
           'attempt', j.attempts, 'worker', j.leased_by, 'started_at', j.started_at, 'ended_at', now(),
           'outcome', 'handed_back', 'error', 'the worker stopped before the job finished'))
    FROM locked WHERE j.id = locked.id
  RETURNING j.id)
SELECT id, (SELECT count(*) FROM (SELECT pg_notify('thumbs_jobs', '')) n) AS notified FROM returned
