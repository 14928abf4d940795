-- name: lease_webhook_deliveries
-- Claims up to @limit due deliveries to endpoint @url (none while it is off), oldest due first, and pushes
-- each one's next attempt @lease_seconds seconds ahead: if the claiming worker dies, the delivery is due again
-- then, and another worker sends it. Returns what a POST needs: the event's kind, creation time
-- (Unix seconds) and payload, and the claim's token for writing the answer.
-- params: url text, limit int, lease_seconds float8
-- returns: id bigint, token uuid, attempts int, first_attempt_epoch float8, event_id bigint,
-- returns: kind text, created_epoch float8, payload text
-- deadline: quick
WITH due AS (
  SELECT d.id FROM thumbs.webhook_deliveries d
   WHERE d.endpoint = @url::text AND d.state = 'pending' AND d.next_attempt_at <= now()
     AND EXISTS (SELECT 1 FROM thumbs.webhook_endpoints w WHERE w.url = d.endpoint AND w.disabled_at IS NULL)
   ORDER BY d.next_attempt_at, d.id
   LIMIT @limit::int
   FOR UPDATE OF d SKIP LOCKED),
claimed AS (
  UPDATE thumbs.webhook_deliveries d
     SET attempts = d.attempts + 1, lease_token = gen_random_uuid(),
         next_attempt_at = now() + make_interval(secs => @lease_seconds::float8),
         first_attempt_at = coalesce(d.first_attempt_at, now())
    FROM due WHERE d.id = due.id
  RETURNING d.id, d.lease_token, d.attempts, d.first_attempt_at, d.event_id)
SELECT c.id, c.lease_token AS token, c.attempts,
       extract(epoch FROM c.first_attempt_at)::float8 AS first_attempt_epoch, c.event_id, e.kind,
       extract(epoch FROM e.created_at)::float8 AS created_epoch, e.payload::text AS payload
  FROM claimed c JOIN thumbs.events e ON e.id = c.event_id
 ORDER BY c.id
