-- name: overview_webhooks
-- Each webhook endpoint: off or on, its pending deliveries (the due index), and the newest error of a
-- delivery still pending, if any. Delivered rows are never counted: they may be many.
-- params: none
-- returns: url text, disabled_reason text?, pending bigint, due bigint, oldest_pending_seconds float8?
-- returns: last_status int?, last_error text?
-- deadline: quick
SELECT w.url, CASE WHEN w.disabled_at IS NOT NULL THEN coalesce(w.disabled_reason, 'disabled') END
         AS disabled_reason,
       p.pending, p.due, extract(epoch FROM now() - p.oldest)::float8 AS oldest_pending_seconds,
       e.last_status, e.last_error
  FROM thumbs.webhook_endpoints w
  CROSS JOIN LATERAL (
    SELECT count(*) AS pending, count(*) FILTER (WHERE d.next_attempt_at <= now()) AS due,
           min(d.created_at) AS oldest
      FROM thumbs.webhook_deliveries d
     WHERE d.endpoint = w.url AND d.state = 'pending') p
  LEFT JOIN LATERAL (
    SELECT d.last_status, d.last_error
      FROM thumbs.webhook_deliveries d
     WHERE d.endpoint = w.url AND d.state = 'pending' AND d.attempts > 0
     ORDER BY d.next_attempt_at DESC, d.id DESC
     LIMIT 1) e ON true
 ORDER BY w.url
