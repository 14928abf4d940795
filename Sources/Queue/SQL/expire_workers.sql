-- name: expire_workers
-- Deletes the thumbs.workers rows of workers that stopped heartbeating three lease TTLs ago (at least
-- a minute); returns how many.
-- params: none
-- returns: expired int
-- deadline: quick
SELECT thumbs.expire_workers() AS expired
