-- name: server_liveness
-- Gives the server's side of a connection the bounds of the client's (DatabaseLiveness, or what the
-- URL set instead): a worker or a `thumbd migrate` whose host vanishes is noticed by the server within
-- them, so its open transaction is rolled back and its session lock (lock_migrations) released, and its
-- backend does not keep a connection slot, instead of until the server's own keepalives give up (two
-- hours by default). client_connection_check_interval (PostgreSQL 14 and later) also ends a statement
-- that waits on a lock once its client is found gone. Values in the units of the settings: seconds,
-- a count, milliseconds, milliseconds.
-- params: keepalives_idle text, keepalives_interval text, keepalives_count text, tcp_user_timeout text,
-- params: check_interval text
-- returns: settings bigint
-- deadline: quick
SELECT count(*) AS settings FROM (
  SELECT set_config('tcp_keepalives_idle', $1, false)
  UNION ALL SELECT set_config('tcp_keepalives_interval', $2, false)
  UNION ALL SELECT set_config('tcp_keepalives_count', $3, false)
  UNION ALL SELECT set_config('tcp_user_timeout', $4, false)
  UNION ALL SELECT set_config('client_connection_check_interval', $5, false)
   WHERE current_setting('server_version_num')::int >= 140000) AS applied
