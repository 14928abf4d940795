-- name: gc_settle
-- Erasures whose every key is decided (deleted or kept) get their `forgotten` event, listing the keys
-- deleted, announced on thumbs_events; then the erasure's rows go. Up to @batch_size at a time, SKIP LOCKED.
-- Candidates that are not (kept, or deleted long enough ago that no running job was leased before)
-- are pruned too.
-- params: batch_size bigint
-- returns: events bigint, notified bigint
-- deadline: batch
WITH finished AS MATERIALIZED (
  SELECT e.id, e.job_id, e.external_id, e.profile FROM thumbs.erasures e
   WHERE NOT EXISTS (SELECT 1 FROM thumbs.erasure_keys k WHERE k.erasure_id = e.id AND k.outcome IS NULL)
   ORDER BY e.id
   LIMIT @batch_size
   FOR UPDATE SKIP LOCKED),
events AS (
  INSERT INTO thumbs.event_log (job_id, external_id, kind, profile, storage_keys)
  SELECT f.job_id, f.external_id, 'forgotten', f.profile,
         (SELECT coalesce(jsonb_agg(k.storage_key ORDER BY k.storage_key)
                          FILTER (WHERE k.outcome = 'deleted'), '[]'::jsonb)
            FROM thumbs.erasure_keys k WHERE k.erasure_id = f.id)
    FROM finished f
   ORDER BY f.id
  RETURNING id),
gone AS (
  DELETE FROM thumbs.erasures e USING finished f WHERE e.id = f.id),
idle AS (
  DELETE FROM thumbs.gc_objects g
   WHERE g.state IS NULL
     AND (g.deleted_at IS NULL
          OR g.deleted_at < least(now() - interval '10 minutes',
                                  (SELECT min(j.started_at) FROM thumbs.jobs j WHERE j.state = 'running'))))
SELECT (SELECT count(*) FROM events) AS events,
       (SELECT count(pg_notify('thumbs_events', e.id::text)) FROM events e) AS notified
