-- name: complete_jobs
-- Marks the jobs succeeded (with their ThumbHash, render key, the job whose variants they reused, if
-- any, and their stage times) and inserts their variant rows in one statement: for each job both happen
-- or neither does. @ids, @tokens, @thumbhashes to @warnings and @media hold one entry per job;
-- @variant_job_ids to @storage_keys one per variant, @variant_job_ids naming its job. Returns the ids written; a job missing from the answer lost its lease, and its variant rows were
-- not inserted either.
--
-- Fencing, lock order and lookup by id as in heartbeat_jobs: only rows still running under the caller's
-- lease_token, locked in id order.
--
-- Each job's photo (its external id, else its source's identity) gets the job's variants as its current
-- thumbnails (migrations/0009), unless a newer job of the photo already gave it its own: the photo's row
-- is updated only for a higher job id, and the photo's variant rows follow it.
--
-- Each job's `succeeded` event (migrations/0010) is written too, with its warnings (migrations/0014) and
-- metadata, each variant with its public `url` when @public_url_base (the worker's --public-url-base, ending in a
-- slash) is given (migrations/0015), a video's media (migrations/0016), and announced on thumbs_events; notified counts the announcements
-- (evaluated once, on the first row). The photo keeps the URL its thumbnails came from, as enqueued,
-- and the job's metadata, for a re-render.
--
-- Collection (migrations/0013): a job naming an object that is being deleted, or was deleted after the
-- job was leased (it may have found the object before the delete and skipped its upload), is not
-- written: the same update sends it back to the queue shortly, its attempt not counted, and it comes
-- back with refused. (One update for both, not two: each data-modifying part of a statement costs its
-- own opening of the table and its indexes, which this hot statement felt.) The caller makes the
-- objects of every job not written candidates for collection (gc_unclaimed).
-- params: ids bigint[], tokens uuid[], variant_job_ids bigint[], names text[], widths int[],
-- params: heights int[], formats text[], bytes bigint[], storage_keys text[], thumbhashes text?[],
-- params: render_keys text?[], reused_from bigint?[], stage_ms jsonb?[], spec_versions bigint?[],
-- params: warnings jsonb[], public_url_base text?, media jsonb?[]
-- returns: id bigint, refused bool, notified bigint
-- deadline: batch
WITH input AS MATERIALIZED (
  SELECT * FROM unnest(@ids::bigint[], @tokens::uuid[], @thumbhashes::text[], @render_keys::text[],
                       @reused_from::bigint[], @stage_ms::jsonb[], @spec_versions::bigint[], @warnings::jsonb[],
                       @media::jsonb[])
           AS t(id, token, thumbhash, render_key, reused_from, stage_ms, spec_version, warnings, media)
   ORDER BY id),
locked AS MATERIALIZED (
  SELECT i.*, held.started_at FROM input i CROSS JOIN LATERAL (
    SELECT j.started_at FROM thumbs.jobs j
     WHERE j.id = i.id AND j.lease_token = i.token AND j.state = 'running'
       FOR UPDATE OF j OFFSET 0) held),
collected AS MATERIALIZED (
  SELECT DISTINCT l.id FROM locked l
    JOIN unnest(@variant_job_ids::bigint[], @storage_keys::text[]) AS n(job_id, storage_key)
      ON n.job_id = l.id
    JOIN thumbs.gc_objects g ON g.storage_key = n.storage_key
   WHERE g.state = 'deleting' OR g.deleted_at >= l.started_at),
ended AS (
  UPDATE thumbs.jobs j
     SET state = CASE WHEN c.id IS NULL THEN 'succeeded' ELSE 'queued' END,
         finished_at = CASE WHEN c.id IS NULL THEN now() END,
         run_at = CASE WHEN c.id IS NULL THEN j.run_at ELSE now() + interval '1 second' END,
         attempts = CASE WHEN c.id IS NULL THEN j.attempts ELSE greatest(j.attempts - 1, 0) END,
         attempt_log = CASE WHEN c.id IS NULL THEN j.attempt_log ELSE thumbs.append_attempt(
           j.attempt_log, jsonb_build_object(
             'attempt', j.attempts, 'worker', j.leased_by, 'started_at', j.started_at, 'ended_at', now(),
             'outcome', 'deferred', 'error',
             'a thumbnail it made is being deleted by collection: it runs again, and stores it again')) END,
         error_code = NULL, last_error = NULL, lease_token = NULL, lease_expires_at = NULL,
         thumbhash = CASE WHEN c.id IS NULL THEN l.thumbhash ELSE j.thumbhash END,
         render_key = CASE WHEN c.id IS NULL THEN l.render_key ELSE j.render_key END,
         reused_from = CASE WHEN c.id IS NULL THEN l.reused_from ELSE j.reused_from END,
         stage_ms = CASE WHEN c.id IS NULL THEN l.stage_ms ELSE j.stage_ms END,
         warnings = CASE WHEN c.id IS NULL THEN l.warnings ELSE j.warnings END,
         media = CASE WHEN c.id IS NULL THEN l.media ELSE j.media END
    FROM locked l LEFT JOIN collected c ON c.id = l.id
   WHERE j.id = l.id
  RETURNING j.id, j.state, j.external_id, j.source_key, j.source_url, j.profile, j.render_key,
            j.thumbhash, j.attempts, j.rerender, l.spec_version, j.warnings, j.metadata, j.media),
done AS (SELECT * FROM ended WHERE state = 'succeeded'),
variant_rows AS (
  SELECT r.job_id, r.name, r.width, r.height, r.format, r.bytes, r.storage_key
    FROM unnest(@variant_job_ids::bigint[], @names::text[], @widths::int[], @heights::int[], @formats::text[],
                @bytes::bigint[], @storage_keys::text[])
         AS r(job_id, name, width, height, format, bytes, storage_key)
    JOIN done ON done.id = r.job_id),
stored AS (
  INSERT INTO thumbs.variants AS v (job_id, name, width, height, format, bytes, storage_key)
  SELECT r.job_id, r.name, r.width, r.height, r.format, r.bytes, r.storage_key FROM variant_rows r
  ON CONFLICT (job_id, name) DO UPDATE
     SET width = excluded.width, height = excluded.height, format = excluded.format,
         bytes = excluded.bytes, storage_key = excluded.storage_key, created_at = now()
  RETURNING v.job_id),
by_external AS (
  INSERT INTO thumbs.photos AS p (external_id, source_url, profile, job_id, render_key, thumbhash,
                                  spec_version, last_source_url, metadata)
  SELECT DISTINCT ON (d.external_id, d.profile)
         d.external_id, d.source_key, d.profile, d.id, d.render_key, d.thumbhash, d.spec_version, d.source_url,
         d.metadata
    FROM done d WHERE d.external_id IS NOT NULL
   ORDER BY d.external_id, d.profile, d.id DESC
  ON CONFLICT (external_id, profile) WHERE external_id IS NOT NULL DO UPDATE
     SET source_url = excluded.source_url, job_id = excluded.job_id, render_key = excluded.render_key,
         thumbhash = excluded.thumbhash, spec_version = excluded.spec_version,
         last_source_url = excluded.last_source_url, metadata = excluded.metadata, updated_at = now()
   WHERE p.job_id < excluded.job_id
  RETURNING p.id, p.job_id),
by_source AS (
  INSERT INTO thumbs.photos AS p (external_id, source_url, profile, job_id, render_key, thumbhash,
                                  spec_version, last_source_url, metadata)
  SELECT DISTINCT ON (d.source_key, d.profile)
         NULL, d.source_key, d.profile, d.id, d.render_key, d.thumbhash, d.spec_version, d.source_url,
         d.metadata
    FROM done d WHERE d.external_id IS NULL
   ORDER BY d.source_key, d.profile, d.id DESC
  ON CONFLICT (source_url, profile) WHERE external_id IS NULL DO UPDATE
     SET job_id = excluded.job_id, render_key = excluded.render_key, thumbhash = excluded.thumbhash,
         spec_version = excluded.spec_version, last_source_url = excluded.last_source_url,
         metadata = excluded.metadata, updated_at = now()
   WHERE p.job_id < excluded.job_id
  RETURNING p.id, p.job_id),
current AS (SELECT id, job_id FROM by_external UNION ALL SELECT id, job_id FROM by_source),
-- Variants the new job does not have (its profile lost one) go; the others are replaced.
dropped AS (
  DELETE FROM thumbs.photo_variants pv USING current c
   WHERE pv.photo_id = c.id
     AND NOT EXISTS (SELECT 1 FROM variant_rows r WHERE r.job_id = c.job_id AND r.name = pv.name)),
current_stored AS (
  INSERT INTO thumbs.photo_variants AS pv (photo_id, name, width, height, format, bytes, storage_key)
  SELECT c.id, r.name, r.width, r.height, r.format, r.bytes, r.storage_key
    FROM current c JOIN variant_rows r ON r.job_id = c.job_id
  ON CONFLICT (photo_id, name) DO UPDATE
     SET width = excluded.width, height = excluded.height, format = excluded.format,
         bytes = excluded.bytes, storage_key = excluded.storage_key),
-- Materialized: computed once. Inlined, a plan that looped over the jobs ran it for each of them, building
-- every variant's JSON again each time (2.6 s for 500 jobs of 4 variants, 0.26 s now).
variant_lists AS MATERIALIZED (
  SELECT r.job_id,
         jsonb_agg(jsonb_build_object('name', r.name, 'width', r.width, 'height', r.height,
                                      'format', r.format, 'bytes', r.bytes, 'storage_key', r.storage_key)
                     || CASE WHEN @public_url_base::text IS NULL THEN '{}'::jsonb
                             ELSE jsonb_build_object('url', @public_url_base::text || r.storage_key) END
                   ORDER BY r.name) AS variants
    FROM variant_rows r GROUP BY r.job_id),
events AS (
  INSERT INTO thumbs.event_log (job_id, external_id, kind, source_url, profile, thumbhash, variants,
                                attempts, rerender, warnings, metadata, media)
  SELECT d.id, d.external_id, 'succeeded', thumbs.redact_url(d.source_url), d.profile, d.thumbhash,
         l.variants, d.attempts, d.rerender, d.warnings, d.metadata, d.media
    FROM done d LEFT JOIN variant_lists l ON l.job_id = d.id
   ORDER BY d.id
  RETURNING id)
SELECT d.id, d.state = 'queued' AS refused,
       (SELECT count(pg_notify('thumbs_events', e.id::text)) FROM events e) AS notified
  FROM ended d
