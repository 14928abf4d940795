-- name: forget_preview
-- What thumbs.forget(@job_id) would scrub, for the confirmation: the photo's current thumbnails (each
-- profile's) and how many of its jobs there are. The photo is its external id, else its source: each
-- a branch of its own, so that each finds its index (a CASE would hide both from the planner).
-- params: job_id bigint
-- returns: profile text, variants bigint, jobs bigint
-- deadline: quick
WITH job AS (SELECT external_id, source_key FROM thumbs.jobs WHERE id = @job_id),
photo AS (
  SELECT p.id, p.profile FROM thumbs.photos p, job
   WHERE job.external_id IS NOT NULL AND p.external_id = job.external_id AND p.external_id IS NOT NULL
  UNION ALL
  SELECT p.id, p.profile FROM thumbs.photos p, job
   WHERE job.external_id IS NULL AND p.source_url = job.source_key AND p.external_id IS NULL)
SELECT photo.profile,
       (SELECT count(*) FROM thumbs.photo_variants v WHERE v.photo_id = photo.id) AS variants,
       (SELECT count(*) FROM thumbs.jobs j, job
         WHERE j.external_id = job.external_id AND j.profile = photo.profile)
       + (SELECT count(*) FROM thumbs.jobs j, job
           WHERE job.external_id IS NULL AND j.source_key = job.source_key AND j.external_id IS NULL
             AND j.profile = photo.profile) AS jobs
  FROM photo
 ORDER BY photo.profile
