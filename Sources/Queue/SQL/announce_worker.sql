-- name: announce_worker
-- Registers a worker or refreshes its thumbs.workers row (heartbeat time, state, counters). An upsert,
-- so a worker whose row expired while it was frozen or cut off comes back once it can reach the
-- database again.
-- params: id text, host text, pid int, version text, concurrency int, memory_budget bigint,
-- params: lease_seconds float8, state text, jobs_succeeded bigint, jobs_failed bigint,
-- params: jobs_retried bigint, leases_lost bigint
-- returns: none
INSERT INTO thumbs.workers AS w
       (id, host, pid, version, concurrency, memory_budget, lease_ttl, state,
        jobs_succeeded, jobs_failed, jobs_retried, leases_lost)
VALUES ($1, $2, $3::int, $4, $5::int, $6::bigint, make_interval(secs => $7::float8), $8,
        $9::bigint, $10::bigint, $11::bigint, $12::bigint)
ON CONFLICT (id) DO UPDATE
   SET last_heartbeat_at = now(), state = excluded.state, jobs_succeeded = excluded.jobs_succeeded,
       jobs_failed = excluded.jobs_failed, jobs_retried = excluded.jobs_retried,
       leases_lost = excluded.leases_lost
