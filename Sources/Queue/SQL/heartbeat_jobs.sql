-- name: heartbeat_jobs
-- Extends the leases of the jobs in (@ids, @tokens) by @lease_seconds seconds; returns the ids whose lease was extended.
-- A job missing from the answer lost its lease (expired and taken, or cancelled).
--
-- Fencing: a row is written only while state = 'running' and its lease_token is the caller's.
-- Deadlocks: the rows are locked in id order (the entries' order) before they are updated, so this
-- and the other fenced writes (a worker's heartbeat and its completions, or a zombie's write and the
-- new holder's) always take their locks in the same order and never wait on each other in a cycle.
-- Lookup: each entry of the arrays, in id order, finds its own row by id (a lateral subquery, which
-- OFFSET 0 keeps apart, so the planner cannot turn the join around). Left to the planner, a plan made
-- while the statistics said no job ran (after a deploy, a quiet hour) read every running job of the
-- fleet for each statement, and other shapes compared every entry with every row (90 ms at a batch
-- of 500). This costs one index lookup per entry, whatever the statistics; the locks are still taken
-- in id order, the order of the entries.
-- Only lease_expires_at changes, a column no index covers, so the update is HOT.
-- params: ids bigint[], tokens uuid[], lease_seconds float8
-- returns: id bigint
-- deadline: quick
WITH input AS MATERIALIZED (
  SELECT * FROM unnest(@ids::bigint[], @tokens::uuid[]) AS t(id, token) ORDER BY id),
locked AS MATERIALIZED (
  SELECT i.id FROM input i CROSS JOIN LATERAL (
    SELECT FROM thumbs.jobs j
     WHERE j.id = i.id AND j.lease_token = i.token AND j.state = 'running'
       FOR UPDATE OF j OFFSET 0) held)
UPDATE thumbs.jobs j SET lease_expires_at = now() + make_interval(secs => @lease_seconds::float8)
  FROM locked WHERE j.id = locked.id
RETURNING j.id
