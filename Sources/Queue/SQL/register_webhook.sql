-- name: register_webhook
-- Records the worker's webhook URL @url as an endpoint, starting after the newest event that can no
-- longer be passed by a late commit (what happened before is not sent unless replayed). An endpoint
-- that exists keeps its cursor and its on/off state. Returns whether it is off (answered 410).
-- params: url text
-- returns: disabled bool
-- deadline: quick
WITH added AS (
  INSERT INTO thumbs.webhook_endpoints (url, cursor)
  SELECT @url::text,
         (SELECT l.txid::text || '/' || l.id::text FROM thumbs.event_log l
           WHERE l.txid < pg_snapshot_xmin(pg_current_snapshot())
           ORDER BY l.txid DESC, l.id DESC LIMIT 1)
  ON CONFLICT (url) DO NOTHING
  RETURNING disabled_at)
SELECT coalesce((SELECT disabled_at IS NOT NULL FROM added),
                (SELECT disabled_at IS NOT NULL FROM thumbs.webhook_endpoints WHERE url = @url::text),
                false) AS disabled
