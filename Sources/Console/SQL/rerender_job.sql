-- name: rerender_job
-- The Re-render button: the job's photo enqueued again (thumbs.enqueue), with its source, profile,
-- external id, owner and metadata, at the default priority. NULL when the job's source is gone
-- (forgotten) or the photo already has a queued job of the profile, which then serves.
-- params: id bigint
-- returns: job_id bigint?
-- deadline: quick
SELECT thumbs.enqueue(j.source_url, j.profile, 0, now(), j.metadata, j.external_id, j.owner) AS job_id
  FROM thumbs.jobs j
 WHERE j.id = @id AND j.source_url IS NOT NULL
