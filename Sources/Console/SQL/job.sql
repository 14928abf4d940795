-- name: job
-- A job's page: the row, with its times as text (UTC) and its JSON columns as text.
-- params: id bigint
-- returns: id bigint, state text, profile text, priority int, owner text?, external_id text?
-- returns: source_url text?, source_key text?, attempts int, max_attempts int, error_code text?
-- returns: last_error text?, metadata jsonb, media jsonb?, thumbhash text?, stage_ms jsonb?
-- returns: attempt_log jsonb, warnings jsonb, created text, run_at text, started text?, finished text?
-- returns: leased_by text?, lease_seconds_left float8?, rerender bool, reused_from bigint?
-- returns: spec_version bigint?, render_key text?
-- deadline: quick
SELECT id, state, profile, priority, owner, external_id, source_url, source_key, attempts, max_attempts,
       error_code, last_error, metadata, media, thumbhash, stage_ms, attempt_log, warnings,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') AS created,
       to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') AS run_at,
       to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') AS started,
       to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') AS finished,
       leased_by, extract(epoch FROM lease_expires_at - now())::float8 AS lease_seconds_left, rerender,
       reused_from, spec_version, render_key
  FROM thumbs.jobs
 WHERE id = @id
