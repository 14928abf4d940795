-- name: lease_jobs
-- Claims up to @limit due jobs: highest priority first, then the lowest turn (migrations/0019: owners are
-- served in turn), then the oldest id. Every due queued job has a turn and only those do, so the pick is
-- the first rows of jobs_turn_idx whatever the backlog. SKIP LOCKED lets many workers lease at once
-- without waiting on each other's rows; attempts is counted here, at lease.
--
-- Siblings: with each batch come up to @siblings more due jobs naming a source the batch already names (the
-- same photo under other profiles; sources are compared by identity, thumbs.source_identity), so one worker downloads a popular original once for all of them
-- instead of several workers each downloading it. Only jobs that thumbs.enqueue marked shares_source
-- (their URL has other live jobs) are looked up. They are locked with SKIP LOCKED; the worker may hold
-- more jobs than its concurrency this way, and runs the extra ones as slots free.
--
-- The statement runs its generic plan (SQL/session_settings.sql), made once: the source keys are looked
-- up as one array in jobs_source_key_idx, and the siblings' state and run_at are tested in a CASE that
-- no other index can serve, so that no plan, made over an empty queue or a full one, walks the queue
-- to find them.
--
-- The owner comes along: a worker gives a freed slot to the waiting job whose owner has the fewest at work
-- there (HeldJobs), so an upload leased behind an import's read-ahead job does not wait for it.
--
-- Each profile's spec (and its version, migrations/0013) is read fresh for every lease, but sent once
-- per profile per batch (NULL on the other rows of that profile): turning the jsonb into text for every
-- row cost more than the rest of the statement.
-- params: worker_id text, limit bigint, lease_seconds float8, siblings bigint
-- returns: id bigint, source_url text, profile text, attempts int, max_attempts int, lease_token uuid,
-- returns: owner text?, spec text?, spec_version bigint?
-- deadline: quick
WITH picked AS MATERIALIZED (
  SELECT id, source_key, shares_source FROM thumbs.jobs
   WHERE state = 'queued' AND turn IS NOT NULL
   ORDER BY priority DESC, turn, id
   LIMIT @limit
   FOR UPDATE SKIP LOCKED),
siblings AS MATERIALIZED (
  SELECT s.id FROM thumbs.jobs s
   WHERE s.source_key = ANY (ARRAY(SELECT source_key FROM picked WHERE shares_source))
     AND CASE WHEN s.state = 'queued' THEN s.run_at <= now() ELSE false END
     AND s.id <> ALL (ARRAY(SELECT id FROM picked))
   LIMIT @siblings
   FOR UPDATE SKIP LOCKED),
chosen AS (SELECT id FROM picked UNION ALL SELECT id FROM siblings),
leased AS (
  UPDATE thumbs.jobs j
     SET state = 'running', turn = NULL, attempts = j.attempts + 1, lease_token = gen_random_uuid(),
         lease_expires_at = now() + make_interval(secs => @lease_seconds::float8), leased_by = @worker_id,
         started_at = now()
   WHERE j.id = ANY (ARRAY(SELECT id FROM chosen))
  RETURNING j.id, j.source_url, j.profile, j.attempts, j.max_attempts, j.lease_token, j.owner)
SELECT l.id, l.source_url, l.profile, l.attempts, l.max_attempts, l.lease_token, l.owner,
       CASE WHEN row_number() OVER (PARTITION BY l.profile ORDER BY l.id) = 1
            THEN (SELECT p.spec::text FROM thumbs.profiles p WHERE p.name = l.profile) END AS spec,
       CASE WHEN row_number() OVER (PARTITION BY l.profile ORDER BY l.id) = 1
            THEN (SELECT p.version FROM thumbs.profiles p WHERE p.name = l.profile) END AS spec_version
  FROM leased l
 ORDER BY l.id
