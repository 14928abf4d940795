-- name: overview_owners
-- The owners with the largest backlogs (thumbs.owner_overview's first rows). The NULL owner is the
-- jobs enqueued without one.
-- params: none
-- returns: owner text?, queued bigint, due bigint, running bigint, oldest_queued_seconds float8?
-- deadline: quick
SELECT owner, queued, due, running, extract(epoch FROM oldest_queued_age)::float8 AS oldest_queued_seconds
  FROM thumbs.owner_overview
 LIMIT 10
