-- 0011: webhooks, delivered by the workers through the database.
--
-- An endpoint (the URL a worker is configured with) keeps a cursor over thumbs.events in commit order
-- (the order thumbs.events_after hands out). A worker that holds the endpoint's row lock moves the
-- cursor forward and queues one delivery row per event; any worker then claims due deliveries with
-- SKIP LOCKED, POSTs them and writes the answer back. A claim pushes the delivery's next attempt a
-- lease ahead, so a worker killed mid-delivery leaves it due again when the lease runs out: at least
-- once, never lost. 410 disables the endpoint (thumbs.enable_webhook turns it back on);
-- thumbs.replay_webhooks queues the events of a time range again. Runs again unchanged on a schema
-- that already has it.

CREATE TABLE IF NOT EXISTS thumbs.webhook_endpoints (
  url              text PRIMARY KEY,
  registered_at    timestamptz NOT NULL DEFAULT now(),
  -- The last event (txid/id, as thumbs.events_after's cursor) whose delivery was queued; events after
  -- it are queued next. A new endpoint starts at the newest event: what happened before it existed is
  -- not sent unless replayed.
  cursor           text,
  -- Set when the endpoint answered 410 Gone: nothing is sent to it (its cursor still moves, queueing
  -- nothing) until thumbs.enable_webhook.
  disabled_at      timestamptz,
  disabled_reason  text
);

CREATE TABLE IF NOT EXISTS thumbs.webhook_deliveries (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint          text NOT NULL REFERENCES thumbs.webhook_endpoints (url) ON DELETE CASCADE,
  -- An event's deliveries go with it when event retention deletes it.
  event_id          bigint NOT NULL REFERENCES thumbs.event_log (id) ON DELETE CASCADE,
  state             text NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'delivered', 'given_up', 'stopped')),
  attempts          int NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  first_attempt_at  timestamptz,
  -- The claim of the attempt in flight: only its holder may write the attempt's answer.
  lease_token       uuid,
  last_status       int,
  last_error        text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  delivered_at      timestamptz,
  UNIQUE (endpoint, event_id)
);

CREATE INDEX IF NOT EXISTS webhook_deliveries_due_idx
  ON thumbs.webhook_deliveries (endpoint, next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_event_idx ON thumbs.webhook_deliveries (event_id);

-- Turns an endpoint that answered 410 back on. Deliveries stopped by the 410 stay stopped; events
-- from while it was off are sent by thumbs.replay_webhooks. Returns whether it was off.
CREATE OR REPLACE FUNCTION thumbs.enable_webhook(url text) RETURNS boolean
LANGUAGE sql AS $$
  WITH enabled AS (
    UPDATE thumbs.webhook_endpoints w SET disabled_at = NULL, disabled_reason = NULL
     WHERE w.url = enable_webhook.url AND w.disabled_at IS NOT NULL
    RETURNING 1)
  SELECT count(*) > 0 FROM enabled;
$$;

-- Queues again, for one endpoint (NULL: every endpoint that is on), every kept event created at or
-- after `since`: delivered, given up and stopped deliveries are sent again (same webhook-id), new
-- ones added for events from before the endpoint existed or while it was off. Returns how many.
CREATE OR REPLACE FUNCTION thumbs.replay_webhooks(since timestamptz, url text DEFAULT NULL) RETURNS int
LANGUAGE sql AS $$
  WITH replayed AS (
    INSERT INTO thumbs.webhook_deliveries AS d (endpoint, event_id)
    SELECT w.url, e.id
      FROM thumbs.webhook_endpoints w, thumbs.event_log e
     WHERE (replay_webhooks.url IS NULL OR w.url = replay_webhooks.url) AND w.disabled_at IS NULL
       AND e.created_at >= since
    ON CONFLICT (endpoint, event_id) DO UPDATE
       SET state = 'pending', attempts = 0, next_attempt_at = now(), first_attempt_at = NULL,
           delivered_at = NULL
     WHERE d.state <> 'pending'
    RETURNING 1)
  SELECT count(*)::int FROM replayed;
$$;

-- Per endpoint: whether it is on, and its deliveries by state.
CREATE OR REPLACE VIEW thumbs.webhook_overview AS
SELECT w.url, w.registered_at, w.disabled_at, w.disabled_reason,
       count(*) FILTER (WHERE d.state = 'pending') AS pending,
       count(*) FILTER (WHERE d.state = 'pending' AND d.next_attempt_at <= now()) AS due,
       count(*) FILTER (WHERE d.state = 'pending' AND d.attempts > 0) AS retrying,
       count(*) FILTER (WHERE d.state = 'delivered') AS delivered,
       count(*) FILTER (WHERE d.state = 'given_up') AS given_up,
       count(*) FILTER (WHERE d.state = 'stopped') AS stopped,
       min(d.created_at) FILTER (WHERE d.state = 'pending') AS oldest_pending
  FROM thumbs.webhook_endpoints w
  LEFT JOIN thumbs.webhook_deliveries d ON d.endpoint = w.url
 GROUP BY w.url, w.registered_at, w.disabled_at, w.disabled_reason;
