-- name: gc_fence
-- Stamps the objects marked deleting with the time this statement saw the mark (migrations/0013). It
-- runs after the mark committed, so a job leased after the stamp sees the mark when it completes, and
-- is refused if it names the object; the jobs leased before it are waited for (gc_claim).
-- params: none
-- returns: fenced bigint
-- deadline: quick
WITH fenced AS (
  UPDATE thumbs.gc_objects g SET fenced_at = clock_timestamp()
   WHERE g.state = 'deleting' AND g.fenced_at IS NULL
  RETURNING 1)
SELECT count(*) AS fenced FROM fenced
