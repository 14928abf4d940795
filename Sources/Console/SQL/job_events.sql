-- name: job_events
-- A job's events (thumbs.events' rows of it) and, for each, its webhook deliveries as a JSON array.
-- params: job_id bigint
-- returns: id bigint, kind text, created text, error_code text?, deliveries jsonb
-- deadline: quick
SELECT e.id, e.kind, to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') AS created,
       e.error_code,
       coalesce((SELECT jsonb_agg(jsonb_build_object(
                          'endpoint', d.endpoint, 'state', d.state, 'attempts', d.attempts,
                          'last_status', d.last_status, 'last_error', d.last_error) ORDER BY d.id)
                   FROM thumbs.webhook_deliveries d
                  WHERE d.event_id = e.id), '[]') AS deliveries
  FROM thumbs.event_log e
 WHERE e.job_id = @job_id
 ORDER BY e.id
