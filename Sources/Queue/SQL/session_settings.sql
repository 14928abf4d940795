-- name: session_settings
-- A prepared-statement connection's session settings.
--
-- The server's side of the connection gets the bounds of the client's (DatabaseLiveness, or what the
-- URL set instead): a worker or a `thumbd migrate` whose host vanishes is noticed by the server within
-- them, so its open transaction is rolled back and its session lock (lock_migrations) released, and its
-- backend does not keep a connection slot, instead of until the server's own keepalives give up (two
-- hours by default). client_connection_check_interval (PostgreSQL 14 and later) also ends a statement
-- that waits on a lock once its client is found gone. Values in the units of the settings: seconds,
-- a count, milliseconds, milliseconds.
--
-- plan_cache_mode and enable_seqscan (@plan_cache_mode, @enable_seqscan): force_generic_plan and off on the connection that
-- leases, auto and on elsewhere. The lease's `LIMIT @limit` makes its generic plan look costly to PostgreSQL
-- (it assumes a tenth of the queue is wanted), so left to itself it plans the statement afresh for every
-- lease, the largest single cost of a small lease. A generic plan is made once, though, perhaps while
-- the table is nearly empty, when reading it whole looks cheapest; without sequential scans it is index
-- scans only, the same plan from an empty queue to millions of queued jobs (LeasePlanTests).
-- params: keepalives_idle text, keepalives_interval text, keepalives_count text, tcp_user_timeout text,
-- params: check_interval text, plan_cache_mode text, enable_seqscan text
-- returns: settings bigint
-- deadline: quick
SELECT count(*) AS settings FROM (
  SELECT set_config('tcp_keepalives_idle', @keepalives_idle, false)
  UNION ALL SELECT set_config('tcp_keepalives_interval', @keepalives_interval, false)
  UNION ALL SELECT set_config('tcp_keepalives_count', @keepalives_count, false)
  UNION ALL SELECT set_config('tcp_user_timeout', @tcp_user_timeout, false)
  UNION ALL SELECT set_config('plan_cache_mode', @plan_cache_mode, false)
  UNION ALL SELECT set_config('enable_seqscan', @enable_seqscan, false)
  UNION ALL SELECT set_config('client_connection_check_interval', @check_interval, false)
   WHERE current_setting('server_version_num')::int >= 140000) AS applied
