-- name: unlock_migrations
-- Releases the lock of lock_migrations.
-- params: key bigint
-- returns: pg_advisory_unlock bool
-- deadline: quick
SELECT pg_advisory_unlock(@key::bigint)
