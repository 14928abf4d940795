-- name: complete_jobs
-- Marks the jobs succeeded (with their ThumbHash, render key, the job whose variants they reused, if
-- any, and their stage times) and inserts their variant rows in one statement: for each job both happen
-- or neither does. $1, $2, $10 to $13 are one entry per job; $3 to $9 one per variant, $3 naming its
-- job. Returns the ids written; a job missing from the answer lost its lease, and its variant rows were
-- not inserted either.
--
-- Fencing and lock order as in heartbeat_jobs: only rows still running under the caller's
-- lease_token, locked in id order.
-- params: ids bigint[], tokens uuid[], variant_job_ids bigint[], names text[], widths int[],
-- params: heights int[], formats text[], bytes bigint[], storage_keys text[], thumbhashes text?[],
-- params: render_keys text?[], reused_from bigint?[], stage_ms jsonb?[]
-- returns: id bigint
WITH input AS (
  SELECT * FROM unnest($1::bigint[], $2::uuid[], $10::text[], $11::text[], $12::bigint[], $13::jsonb[])
           AS t(id, token, thumbhash, render_key, reused_from, stage_ms)),
locked AS MATERIALIZED (
  SELECT j.id FROM thumbs.jobs j JOIN input i ON i.id = j.id
   WHERE j.lease_token = i.token AND j.state = 'running'
   ORDER BY j.id FOR UPDATE OF j),
done AS (
  UPDATE thumbs.jobs j
     SET state = 'succeeded', finished_at = now(), error_code = NULL, last_error = NULL,
         lease_token = NULL, lease_expires_at = NULL, thumbhash = i.thumbhash,
         render_key = i.render_key, reused_from = i.reused_from, stage_ms = i.stage_ms
    FROM locked, input i WHERE j.id = locked.id AND i.id = j.id
  RETURNING j.id),
stored AS (
  INSERT INTO thumbs.variants AS v (job_id, name, width, height, format, bytes, storage_key)
  SELECT r.job_id, r.name, r.width, r.height, r.format, r.bytes, r.storage_key
    FROM unnest($3::bigint[], $4::text[], $5::int[], $6::int[], $7::text[], $8::bigint[], $9::text[])
         AS r(job_id, name, width, height, format, bytes, storage_key)
    JOIN done ON done.id = r.job_id
  ON CONFLICT (job_id, name) DO UPDATE
     SET width = excluded.width, height = excluded.height, format = excluded.format,
         bytes = excluded.bytes, storage_key = excluded.storage_key, created_at = now()
  RETURNING v.job_id)
SELECT id FROM done
