-- name: delete_jobs
-- `thumbd bench`: deletes every bench job (before a run, and after it, so runs do not pile up): the
-- no-op jobs inserted directly (bench://), and the latency jobs, enqueued through thumbs.enqueue, which
-- takes http and https URLs only (a .invalid host: nothing ever fetches them).
-- params: none
-- returns: none
DELETE FROM thumbs.jobs WHERE source_url LIKE 'bench://%' OR source_url LIKE 'http://bench.invalid/%'
