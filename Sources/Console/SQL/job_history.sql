-- name: job_history
-- The photo's other jobs, newest first: by its external id (jobs_external_idx) when it has one, else
-- by its source's identity (jobs_source_key_idx).
-- params: id bigint, external_id text?, source_key text?
-- returns: id bigint, state text, profile text, error_code text?, rerender bool, created text
-- deadline: quick
SELECT id, state, profile, error_code, rerender,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS created
  FROM thumbs.jobs
 WHERE id <> @id
   AND CASE WHEN @external_id::text IS NOT NULL THEN external_id = @external_id
            ELSE source_key = @source_key AND external_id IS NULL END
 ORDER BY id DESC
 LIMIT 50
