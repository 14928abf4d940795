-- name: lock_migrations
-- Takes the session advisory lock that serialises concurrent `thumbd migrate` runs (a fleet starting
-- at once): the second waits here, then finds nothing to do. @key is a fixed key all thumbd processes
-- agree on.
-- params: key bigint
-- returns: pg_advisory_lock void
-- deadline: none
SELECT pg_advisory_lock(@key::bigint)
