-- name: workers
-- The registered workers (thumbs.worker_overview), with whether each is ready: running, and its
-- heartbeat younger than its lease TTL.
-- params: none
-- returns: id text, host text, pid int, state text, version text, concurrency int, memory_budget bigint
-- returns: running bigint, jobs_succeeded bigint, jobs_failed bigint, leases_lost bigint
-- returns: heartbeat_seconds float8, stale bool, started_at timestamptz
-- deadline: quick
SELECT id, host, pid, state, version, concurrency, memory_budget, running, jobs_succeeded, jobs_failed,
       leases_lost, extract(epoch FROM heartbeat_age)::float8 AS heartbeat_seconds, stale, started_at
  FROM thumbs.worker_overview
