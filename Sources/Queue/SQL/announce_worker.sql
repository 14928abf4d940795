-- name: announce_worker
-- Registers a worker or refreshes its thumbs.workers row (heartbeat time, state, counters). An upsert,
-- so a worker whose row expired while it was frozen or cut off comes back once it can reach the
-- database again. source_schemes: the schemes of source URLs it reads (a worker of a release that does
-- not say reads http and https only, and is not given s3:// jobs: migration 0012). fences_collection:
-- it refuses completions naming objects being deleted (migration 0013).
--
-- watches: whether the worker is one of the first @watchers running workers (by id) with a fresh heartbeat.
-- Only those listen for new jobs and run the fleet's rounds (rescue, promotion, housekeeping); the others
-- poll (PostgreSQL wakes every listener of the database at each notifying commit, at a cost to it per
-- listener).
-- params: id text, host text, pid int, version text, concurrency int, memory_budget bigint,
-- params: lease_seconds float8, state text, jobs_succeeded bigint, jobs_failed bigint,
-- params: jobs_retried bigint, leases_lost bigint, source_schemes text[], watchers bigint
-- returns: watches bool
-- deadline: quick
INSERT INTO thumbs.workers AS w
       (id, host, pid, version, concurrency, memory_budget, lease_ttl, state,
        jobs_succeeded, jobs_failed, jobs_retried, leases_lost, source_schemes, fences_collection)
VALUES (@id, @host, @pid::int, @version, @concurrency::int, @memory_budget::bigint,
        make_interval(secs => @lease_seconds::float8), @state, @jobs_succeeded::bigint, @jobs_failed::bigint,
        @jobs_retried::bigint, @leases_lost::bigint, @source_schemes::text[], true)
ON CONFLICT (id) DO UPDATE
   SET last_heartbeat_at = now(), state = excluded.state, jobs_succeeded = excluded.jobs_succeeded,
       jobs_failed = excluded.jobs_failed, jobs_retried = excluded.jobs_retried,
       leases_lost = excluded.leases_lost, source_schemes = excluded.source_schemes,
       fences_collection = true
RETURNING w.state = 'running'
          AND (SELECT count(*) FROM thumbs.workers o
                WHERE o.id < w.id AND o.state = 'running' AND o.last_heartbeat_at > now() - o.lease_ttl)
              < @watchers::bigint AS watches
