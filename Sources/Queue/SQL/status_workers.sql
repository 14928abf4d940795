-- name: status_workers
-- `thumbd status`: the registered workers, as text ready to print.
-- params: none
-- returns: id text, state text, concurrency text?, running text?, jobs_succeeded text?,
-- returns: jobs_failed text?, leases_lost text?, heartbeat text?, stale text?
-- deadline: none
SELECT id, state, concurrency::text, running::text, jobs_succeeded::text, jobs_failed::text,
       leases_lost::text, date_trunc('second', heartbeat_age)::text AS heartbeat,
       CASE WHEN stale THEN 'yes' ELSE '' END AS stale
  FROM thumbs.worker_overview
