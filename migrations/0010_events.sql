-- 0010: completion events, written with the outcome.
--
-- Every terminal change of a job (succeeded, failed, cancelled) inserts one row into thumbs.event_log
-- (read through the view thumbs.events) in the same statement as the change, and NOTIFY thumbs_events carries the event's id. The statements
-- that make such a change (complete_jobs, fail_jobs, rescue_expired_jobs, thumbs.cancel) write them;
-- an operator's UPDATE by hand does not.
--
-- Event ids come from a sequence, so they are not in commit order: a transaction that took id 7 may
-- commit after one that took id 8. A consumer that reads "after id 8" would never see 7. Each row
-- therefore carries the id of the transaction that wrote it (txid), and thumbs.events_after hands out
-- only events of transactions that ended before every transaction still running began (below the
-- snapshot's xmin), in (txid, id) order: once a consumer has read past a point, nothing can commit
-- behind it. Runs again unchanged on a schema that already has it.

-- A URL as events show it: a userinfo password and a presigned URL's secrets masked (the worker's
-- SourceURL.redacted gives the same answers: SourceURLTests and EventsTests hold them to one table).
-- Not STRICT: PostgreSQL inlines a SQL function into the calling statement only when it could not
-- change what a NULL argument gives, and a CASE could; a function that is not inlined is planned again
-- on every call. (NULL still gives NULL.)
CREATE OR REPLACE FUNCTION thumbs.redact_url(url text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  -- Most URLs have neither a userinfo nor a query: no regular expression for them.
  SELECT CASE WHEN strpos(url, '@') = 0 AND strpos(url, '=') = 0 THEN url ELSE
    regexp_replace(
      regexp_replace(url, '^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@[:space:]:"'']*):[^/?#@[:space:]"'']*@',
                     '\1:****@'),
      '([?&](X-Amz-Credential|X-Amz-Signature|X-Amz-Security-Token|AWSAccessKeyId|Signature)=)[^&#[:space:]"'']*',
      '\1****', 'g') END;
$$;

-- The rows as written: what the payload says, not the payload itself. Building a jsonb object per
-- job in the completion statement cost the queue about 6% of its throughput; the view below builds it
-- when someone reads it (a consumer reads an event once or twice, the queue writes one per job). The
-- source URL is stored masked: the secret never reaches the table.
CREATE TABLE IF NOT EXISTS thumbs.event_log (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- No foreign key: the job's row may be pruned, its events are kept for their own retention.
  job_id       bigint NOT NULL,
  external_id  text,
  kind         text NOT NULL CHECK (kind IN ('succeeded', 'failed', 'cancelled', 'forgotten')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  -- The writing transaction: thumbs.events_after's commit order.
  txid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
  source_url   text,
  profile      text NOT NULL,
  error_code   text,
  error        text,
  thumbhash    text,
  -- [{name, width, height, format, bytes, storage_key}] of a success; NULL otherwise.
  variants     jsonb,
  attempts     int NOT NULL DEFAULT 0
);

CREATE INDEX IF NOT EXISTS event_log_commit_order_idx ON thumbs.event_log (txid, id);

-- One event per row, with the payload a backend acts on (a webhook's `data`).
CREATE OR REPLACE VIEW thumbs.events AS
SELECT e.id, e.job_id, e.external_id, e.kind, e.created_at,
       jsonb_build_object(
         'job_id', e.job_id, 'external_id', e.external_id, 'source_url', e.source_url,
         'profile', e.profile, 'state', e.kind, 'error_code', e.error_code, 'error', e.error,
         'thumbhash', e.thumbhash, 'variants', coalesce(e.variants, '[]'::jsonb),
         'attempts', e.attempts) AS payload
  FROM thumbs.event_log e;

-- Events in commit order after `after` (a cursor from an earlier call; NULL: from the oldest kept),
-- at most `max_events`. Keep the last row's cursor and pass it next time: no event is skipped, however
-- late its transaction commits. A transaction left open anywhere on the server holds delivery back
-- (never loses it) until it ends. SECURITY DEFINER: the backend's role reads the view, not the rows
-- under it.
CREATE OR REPLACE FUNCTION thumbs.events_after(after text DEFAULT NULL, max_events int DEFAULT 100)
RETURNS TABLE (cursor text, id bigint, job_id bigint, external_id text, kind text,
               created_at timestamptz, payload jsonb)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT l.txid::text || '/' || l.id::text, e.id, e.job_id, e.external_id, e.kind, e.created_at, e.payload
    FROM thumbs.event_log l JOIN thumbs.events e ON e.id = l.id
   WHERE l.txid < pg_snapshot_xmin(pg_current_snapshot())
     AND (after IS NULL
          OR (l.txid, l.id) > (split_part(after, '/', 1)::xid8, split_part(after, '/', 2)::bigint))
   ORDER BY l.txid, l.id
   LIMIT max_events;
$$;

-- Events older than `older_than` go, among the `batch_size` oldest ids (ids follow time closely enough
-- for retention): each call looks at one batch, never the whole table, and the table needs no index of
-- its own for it. Returns how many went; call again while it returns batch_size.
CREATE OR REPLACE FUNCTION thumbs.prune_events(older_than interval DEFAULT '30 days', batch_size int DEFAULT 1000)
RETURNS int
LANGUAGE sql AS $$
  WITH doomed AS (
    SELECT e.id FROM thumbs.event_log e
     WHERE e.id IN (SELECT o.id FROM thumbs.event_log o ORDER BY o.id LIMIT batch_size)
       AND e.created_at < now() - older_than
     FOR UPDATE SKIP LOCKED),
  deleted AS (
    DELETE FROM thumbs.event_log e USING doomed WHERE e.id = doomed.id RETURNING 1)
  SELECT count(*)::int FROM deleted;
$$;

-- thumbs.cancel writes its event too.
CREATE OR REPLACE FUNCTION thumbs.cancel(job_id bigint) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  WITH cancelled AS (
    UPDATE thumbs.jobs j
       SET state = 'cancelled', finished_at = now(), lease_token = NULL, lease_expires_at = NULL
     WHERE j.id = cancel.job_id AND j.state IN ('queued', 'running')
    RETURNING j.id, j.external_id, j.source_url, j.profile, j.attempts),
  written AS (
    INSERT INTO thumbs.event_log (job_id, external_id, kind, source_url, profile, attempts)
    SELECT c.id, c.external_id, 'cancelled', thumbs.redact_url(c.source_url), c.profile, c.attempts
      FROM cancelled c
    RETURNING id)
  SELECT count(pg_notify('thumbs_events', w.id::text)) > 0 FROM written w;
$$;
