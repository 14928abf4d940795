-- name: dispatch_webhook_events
-- Queues a delivery to endpoint @url for each of the next @max_events events after its cursor, in commit order,
-- and moves the cursor past them; returns how many events it passed and how many deliveries it
-- queued (none while the endpoint is off). One worker at a time: the endpoint's row is locked, and a
-- worker that finds it locked passes nothing (SKIP LOCKED). Only events below the snapshot's xmin are
-- taken, as in thumbs.events_after: no later commit can land behind the cursor.
-- params: url text, max_events int
-- returns: passed int, queued int
-- deadline: batch
WITH endpoint AS MATERIALIZED (
  SELECT w.url, w.cursor, w.disabled_at FROM thumbs.webhook_endpoints w
   WHERE w.url = @url::text FOR UPDATE SKIP LOCKED),
batch AS MATERIALIZED (
  SELECT l.id, l.txid FROM thumbs.event_log l, endpoint e
   WHERE l.txid < pg_snapshot_xmin(pg_current_snapshot())
     AND (e.cursor IS NULL
          OR (l.txid, l.id) > (split_part(e.cursor, '/', 1)::xid8, split_part(e.cursor, '/', 2)::bigint))
   ORDER BY l.txid, l.id
   LIMIT @max_events::int),
queued AS (
  INSERT INTO thumbs.webhook_deliveries (endpoint, event_id)
  SELECT e.url, b.id FROM endpoint e, batch b WHERE e.disabled_at IS NULL
  ORDER BY b.txid, b.id
  ON CONFLICT (endpoint, event_id) DO NOTHING
  RETURNING 1),
moved AS (
  UPDATE thumbs.webhook_endpoints w
     SET cursor = (SELECT b.txid::text || '/' || b.id::text FROM batch b ORDER BY b.txid DESC, b.id DESC LIMIT 1)
    FROM endpoint e
   WHERE w.url = e.url AND EXISTS (SELECT 1 FROM batch)
  RETURNING 1)
SELECT (SELECT count(*) FROM batch)::int AS passed, (SELECT count(*) FROM queued)::int AS queued
