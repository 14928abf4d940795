-- name: forget_preview
-- What thumbs.forget(@job_id) would scrub, for the confirmation: the photo's current thumbnails (each
-- profile's) and how many of its jobs there are.
-- params: job_id bigint
-- returns: profile text, variants bigint, jobs bigint
-- deadline: quick
WITH job AS (SELECT external_id, source_key FROM thumbs.jobs WHERE id = @job_id)
SELECT p.profile,
       (SELECT count(*) FROM thumbs.photo_variants v WHERE v.photo_id = p.id) AS variants,
       (SELECT count(*) FROM thumbs.jobs j, job
         WHERE j.profile = p.profile
           AND CASE WHEN job.external_id IS NOT NULL THEN j.external_id = job.external_id
                    ELSE j.source_key = job.source_key AND j.external_id IS NULL END) AS jobs
  FROM thumbs.photos p, job
 WHERE CASE WHEN job.external_id IS NOT NULL THEN p.external_id = job.external_id
            ELSE p.source_url = job.source_key AND p.external_id IS NULL END
 ORDER BY p.profile
