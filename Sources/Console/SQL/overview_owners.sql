-- name: overview_owners
-- The owners with the largest backlogs, as thumbs.owner_overview counts them (the NULL owner is the
-- jobs enqueued without one), but read from the partial indexes of the two live states, one scan each:
-- the view's `state IN (...)` reads the whole table once it holds millions of finished jobs.
-- params: none
-- returns: owner text?, queued bigint, due bigint, running bigint, oldest_queued_seconds float8?
-- deadline: quick
SELECT owner,
       count(*) FILTER (WHERE state = 'queued') AS queued,
       count(*) FILTER (WHERE state = 'queued' AND turn IS NOT NULL) AS due,
       count(*) FILTER (WHERE state = 'running') AS running,
       extract(epoch FROM now() - min(created_at) FILTER (WHERE state = 'queued'))::float8
         AS oldest_queued_seconds
  FROM (SELECT owner, state, turn, created_at FROM thumbs.jobs WHERE state = 'queued'
        UNION ALL
        SELECT owner, state, turn, created_at FROM thumbs.jobs WHERE state = 'running') live
 GROUP BY owner
 ORDER BY 2 DESC, 4 DESC, owner NULLS FIRST
 LIMIT 10
