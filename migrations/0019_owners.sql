-- 0019: owners take turns. A job may name its owner (thumbs.enqueue's `owner`: the user or tenant it is
-- for); among due jobs of equal priority the lease serves owners in turn, so that one user's import of
-- 50,000 photos gets one owner's share of the fleet and everyone else's upload starts next. Jobs without
-- an owner take their turns together, as one owner. Priorities still come first.
--
-- How: every queued, due job holds `turn`, its place in its priority's line, given when it becomes due
-- (enqueued, returned to the queue, or its run_at reached): one past its owner's last queued job of that
-- priority, but never before the head of the line (the lowest turn queued). So an owner with a backlog
-- keeps its jobs one per turn ahead, and an owner with nothing queued joins at the head: its upload is
-- leased right after the jobs already at the head. The lease reads the line in (priority, turn, id)
-- order from one index: its cost does not depend on how many jobs one owner has queued. Nothing else
-- holds state: there is no owners table to keep right, so no update, retry, cancel, retention or TRUNCATE
-- can leave it stale; a job's place is derived from the rows alone, by the trigger, whoever writes them.
--
-- A job waiting for a future run_at (a retry's backoff, a scheduled job) has no turn; the workers give
-- due ones theirs about once a second (promote_due_jobs). Within an owner, jobs go in the order they
-- became due; a job that comes back for another attempt joins the end of its owner's line.
--
-- thumbs.enqueue gains `owner`: the function is replaced, and whoever could run the old one (the
-- backend's role, PUBLIC or not) may run the new one. Runs again unchanged on a schema that has it.

ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS owner text;
ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS turn bigint;
COMMENT ON COLUMN thumbs.jobs.owner IS
  'The user or tenant the job is for (thumbs.enqueue''s owner): among due jobs of equal priority, owners are served in turn; NULL: one owner of its own';
COMMENT ON COLUMN thumbs.jobs.turn IS
  'A queued, due job''s place in its priority''s line (the lease takes the lowest first); NULL while it waits for its run_at. Kept by the jobs_take_turn triggers';

-- The lease's line, and its head.
CREATE INDEX IF NOT EXISTS jobs_turn_idx ON thumbs.jobs (priority DESC, turn, id)
  WHERE state = 'queued' AND turn IS NOT NULL;
-- An owner's last place in a priority's line. Jobs without an owner are one owner, keyed '' (which
-- thumbs.enqueue refuses as an owner): with `owner IS NULL` the index's order would not serve the
-- ORDER BY, and the lookup would read all of their line.
CREATE INDEX IF NOT EXISTS jobs_owner_turn_idx ON thumbs.jobs ((coalesce(owner, '')), priority, turn)
  WHERE state = 'queued' AND turn IS NOT NULL;
-- Queued jobs waiting for their run_at: the ones due get their turn.
CREATE INDEX IF NOT EXISTS jobs_deferred_idx ON thumbs.jobs (run_at)
  WHERE state = 'queued' AND turn IS NULL;

-- The jobs queued before this migration: their places in the order the lease used to take them (before
-- the triggers, which would give them places of their own).
WITH line AS (
  SELECT id, row_number() OVER (PARTITION BY priority ORDER BY run_at, id) - 1 AS place
    FROM thumbs.jobs
   WHERE state = 'queued' AND run_at <= now() AND turn IS NULL)
UPDATE thumbs.jobs j SET turn = line.place FROM line WHERE j.id = line.id;

-- A queued job's place in line (BEFORE INSERT or UPDATE, queued rows only). A job that already has a
-- place keeps it unless its priority or owner changed; one not yet due has none. An owner's last place
-- is never before the head, so the head is looked up only for an owner with nothing in line.
-- Its plans are made once per session and kept, perhaps while the table is nearly empty, when reading
-- it whole looks cheapest: index scans only, so that each lookup stays a step into an index at any size.
CREATE OR REPLACE FUNCTION thumbs.take_turn() RETURNS trigger
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
AS $$
BEGIN
  IF NEW.run_at > now() THEN
    NEW.turn := NULL;
    RETURN NEW;
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.state = 'queued' AND OLD.turn IS NOT NULL AND OLD.priority = NEW.priority
     AND OLD.owner IS NOT DISTINCT FROM NEW.owner THEN
    NEW.turn := OLD.turn;
    RETURN NEW;
  END IF;
  NEW.turn := coalesce(
    (SELECT j.turn + 1 FROM thumbs.jobs j
      WHERE coalesce(j.owner, '') = coalesce(NEW.owner, '') AND j.priority = NEW.priority
        AND j.state = 'queued' AND j.turn IS NOT NULL
      ORDER BY j.turn DESC
      LIMIT 1),
    (SELECT j.turn FROM thumbs.jobs j
      WHERE j.state = 'queued' AND j.turn IS NOT NULL AND j.priority = NEW.priority
      ORDER BY j.priority DESC, j.turn, j.id
      LIMIT 1),
    0);
  RETURN NEW;
END;
$$;

DROP TRIGGER IF EXISTS jobs_take_turn_insert ON thumbs.jobs;
CREATE TRIGGER jobs_take_turn_insert
  BEFORE INSERT ON thumbs.jobs
  FOR EACH ROW WHEN (NEW.state = 'queued')
  EXECUTE FUNCTION thumbs.take_turn();
DROP TRIGGER IF EXISTS jobs_take_turn_update ON thumbs.jobs;
CREATE TRIGGER jobs_take_turn_update
  BEFORE UPDATE OF state, run_at, priority, owner, turn ON thumbs.jobs
  FOR EACH ROW WHEN (NEW.state = 'queued')
  EXECUTE FUNCTION thumbs.take_turn();

CREATE OR REPLACE FUNCTION thumbs.enqueue(
  source_url text,
  profile text DEFAULT 'default',
  priority int DEFAULT 0,
  run_at timestamptz DEFAULT now(),
  metadata jsonb DEFAULT '{}',
  external_id text DEFAULT NULL,
  owner text DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  job_id bigint;
  key text;
  queued_url text;
  problem text := thumbs.source_problem(enqueue.source_url);
BEGIN
  IF problem IS NOT NULL THEN
    RAISE EXCEPTION 'thumbs.enqueue: source_url %',
      CASE WHEN coalesce(enqueue.source_url, '') = '' THEN problem
           ELSE format('''%s'' %s', left(thumbs.redact_url(enqueue.source_url), 200), problem) END
      USING ERRCODE = '22023';
  END IF;
  IF external_id = '' THEN
    RAISE EXCEPTION 'thumbs.enqueue: external_id must not be empty (NULL for none)' USING ERRCODE = '22023';
  END IF;
  IF enqueue.owner = '' THEN
    RAISE EXCEPTION 'thumbs.enqueue: owner must not be empty (NULL for none)' USING ERRCODE = '22023';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM thumbs.profiles p WHERE p.name = enqueue.profile) THEN
    RAISE EXCEPTION 'thumbs.enqueue: no profile named %', enqueue.profile USING ERRCODE = '22023';
  END IF;
  key := thumbs.source_identity(enqueue.source_url);
  LOOP
    -- A queued job of the same photo (or, without an external id, of the same source) is the answer,
    -- and takes the newer URL: an edited photo's new original, or a fresh presigned URL. It keeps its
    -- owner and its place in line.
    -- The photo's queued job is locked first: a lease skips it meanwhile (SKIP LOCKED), or, when a lease
    -- took it first, this finds it running and queues a new job, so that a new original is never lost.
    -- A source's running job is the answer too, and keeps the URL it is fetching.
    IF enqueue.external_id IS NOT NULL THEN
      SELECT j.id, j.source_url INTO job_id, queued_url FROM thumbs.jobs j
       WHERE j.external_id = enqueue.external_id AND j.profile = enqueue.profile AND j.state = 'queued'
       FOR UPDATE;
    ELSE
      SELECT j.id, j.source_url INTO job_id, queued_url FROM thumbs.jobs j
       WHERE j.source_key = key AND j.profile = enqueue.profile AND j.state IN ('queued', 'running')
         AND j.external_id IS NULL;
    END IF;
    IF job_id IS NOT NULL THEN
      IF queued_url <> enqueue.source_url THEN
        UPDATE thumbs.jobs j SET source_url = enqueue.source_url WHERE j.id = job_id AND j.state = 'queued';
      END IF;
      RETURN job_id;
    END IF;

    INSERT INTO thumbs.jobs AS j (source_url, profile, priority, run_at, metadata, external_id, owner)
    VALUES (enqueue.source_url, enqueue.profile, coalesce(enqueue.priority, 0),
            coalesce(enqueue.run_at, now()), coalesce(enqueue.metadata, '{}'), enqueue.external_id,
            enqueue.owner)
    ON CONFLICT DO NOTHING
    RETURNING j.id INTO job_id;
    IF job_id IS NOT NULL THEN
      -- Other live jobs of the source (other profiles): the lease takes them together, for one download.
      PERFORM 1 FROM thumbs.jobs o
       WHERE o.source_key = key AND o.state IN ('queued', 'running') AND o.id <> job_id
       LIMIT 1;
      IF FOUND THEN
        UPDATE thumbs.jobs m SET shares_source = true
         WHERE m.id IN (SELECT o.id FROM thumbs.jobs o
                         WHERE o.source_key = key AND o.state = 'queued' AND NOT o.shares_source
                         FOR UPDATE SKIP LOCKED);
      END IF;
      IF coalesce(enqueue.run_at, now()) <= now() THEN
        PERFORM pg_notify('thumbs_jobs', '');
      END IF;
      RETURN job_id;
    END IF;
    -- Another enqueue of the same photo or source committed first: take its job on the next turn.
  END LOOP;
END;
$$;

-- Whoever could run the old thumbs.enqueue may run the new one, and nobody else: a new function may be
-- run by PUBLIC, which deploy/sql/roles.sql revoked from the old one.
DO $$
DECLARE
  old regprocedure := to_regprocedure('thumbs.enqueue(text, text, integer, timestamptz, jsonb, text)');
  acl aclitem[];
  item record;
BEGIN
  IF old IS NULL THEN
    RETURN;
  END IF;
  SELECT p.proacl INTO acl FROM pg_proc p WHERE p.oid = old;
  IF acl IS NOT NULL THEN
    REVOKE ALL ON FUNCTION thumbs.enqueue(text, text, integer, timestamptz, jsonb, text, text) FROM PUBLIC;
    FOR item IN SELECT a.grantee FROM aclexplode(acl) AS a WHERE a.privilege_type = 'EXECUTE' LOOP
      EXECUTE format('GRANT EXECUTE ON FUNCTION thumbs.enqueue(text, text, integer, timestamptz, jsonb, text, text) TO %s',
                     CASE WHEN item.grantee = 0 THEN 'PUBLIC' ELSE item.grantee::regrole::text END);
    END LOOP;
  END IF;
  EXECUTE format('DROP FUNCTION %s', old);
END;
$$;

-- Owners with live jobs, the largest backlog first: who is holding the queue.
CREATE OR REPLACE VIEW thumbs.owner_overview AS
  SELECT j.owner,
         count(*) FILTER (WHERE j.state = 'queued') AS queued,
         count(*) FILTER (WHERE j.state = 'queued' AND j.turn IS NOT NULL) AS due,
         count(*) FILTER (WHERE j.state = 'running') AS running,
         now() - min(j.created_at) FILTER (WHERE j.state = 'queued') AS oldest_queued_age
    FROM thumbs.jobs j
   WHERE j.state IN ('queued', 'running')
   GROUP BY j.owner
   ORDER BY queued DESC, running DESC, j.owner NULLS FIRST;

-- The fleet's shared count of the live queue (queue_depth): every worker samples the queue for its
-- gauges every few seconds, and at a fleet's size over a large backlog the counting alone would take a
-- database core. One worker counts, the others read its count until it is older than their interval.
CREATE TABLE IF NOT EXISTS thumbs.queue_sample (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  taken_at timestamptz NOT NULL,
  queued bigint NOT NULL,
  ready bigint NOT NULL,
  running bigint NOT NULL,
  oldest_ready_seconds float8 NOT NULL,
  gc_backlog bigint NOT NULL
);
