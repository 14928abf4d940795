-- name: heartbeat_jobs
-- Extends the leases of the jobs in ($1, $2) by $3 seconds; returns the ids whose lease was extended.
-- A job missing from the answer lost its lease (expired and taken, or cancelled).
--
-- Fencing: a row is written only while state = 'running' and its lease_token is the caller's.
-- Deadlocks: the rows are locked in id order (ORDER BY id FOR UPDATE) before they are updated, so this
-- and the other fenced writes (a worker's heartbeat and its completions, or a zombie's write and the
-- new holder's) always take their locks in the same order and never wait on each other in a cycle.
-- The rows are found by `id = ANY ($1)`, not through the join alone: a plan made while the statistics
-- said few jobs ran (after a deploy or a quiet hour) otherwise read every running job of the fleet for
-- each statement, about 1.7 ms per 1,000 running jobs, where this reads the batch's rows only.
-- Only lease_expires_at changes, a column no index covers, so the update is HOT.
-- params: ids bigint[], tokens uuid[], lease_seconds float8
-- returns: id bigint
-- deadline: quick
WITH input AS (SELECT * FROM unnest($1::bigint[], $2::uuid[]) AS t(id, token)),
locked AS MATERIALIZED (
  SELECT j.id FROM thumbs.jobs j JOIN input i ON i.id = j.id
   WHERE j.id = ANY ($1::bigint[]) AND j.lease_token = i.token AND j.state = 'running'
   ORDER BY j.id FOR UPDATE OF j)
UPDATE thumbs.jobs j SET lease_expires_at = now() + make_interval(secs => $3::float8)
  FROM locked WHERE j.id = locked.id
RETURNING j.id
