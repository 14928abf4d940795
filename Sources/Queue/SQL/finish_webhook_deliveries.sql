-- name: finish_webhook_deliveries
-- Writes the answers of claimed deliveries: per delivery its id and claim token, what became of it
-- ('delivered', 'retry' in @retry_in seconds, 'given_up', or 'stopped' by a 410), the HTTP status (NULL: no
-- answer) and what went wrong. Only the claim's holder writes (a delivery whose claim ran out and was
-- taken again is not overwritten). A 'stopped' turns the endpoint off and stops its other pending
-- deliveries. Returns the ids written.
-- params: ids bigint[], tokens uuid[], outcomes text[], statuses int?[], retry_in float8?[],
-- params: errors text?[]
-- returns: id bigint
-- deadline: quick
WITH input AS (
  SELECT * FROM unnest(@ids::bigint[], @tokens::uuid[], @outcomes::text[], @statuses::int[],
                       @retry_in::float8[], @errors::text[])
           AS t(id, token, outcome, status, retry_in, error)),
written AS (
  UPDATE thumbs.webhook_deliveries d
     SET state = CASE i.outcome WHEN 'retry' THEN 'pending' ELSE i.outcome END,
         next_attempt_at = CASE WHEN i.outcome = 'retry' THEN now() + make_interval(secs => i.retry_in)
                                ELSE d.next_attempt_at END,
         delivered_at = CASE WHEN i.outcome = 'delivered' THEN now() END,
         last_status = i.status, last_error = i.error, lease_token = NULL
    FROM input i
   WHERE d.id = i.id AND d.lease_token = i.token
  RETURNING d.id, d.endpoint, i.outcome, i.status),
turned_off AS (
  UPDATE thumbs.webhook_endpoints w
     SET disabled_at = now(),
         disabled_reason = 'answered HTTP ' || (SELECT min(status) FROM written WHERE outcome = 'stopped')
   WHERE w.url IN (SELECT endpoint FROM written WHERE outcome = 'stopped') AND w.disabled_at IS NULL
  RETURNING w.url),
halted AS (
  UPDATE thumbs.webhook_deliveries d SET state = 'stopped', lease_token = NULL
   WHERE d.endpoint IN (SELECT url FROM turned_off) AND d.state = 'pending'
     AND d.id NOT IN (SELECT id FROM written)
  RETURNING 1)
SELECT id FROM written
