-- 0013: forgetting a photo, collecting the objects nothing live names, and re-rendering after a change
-- of a profile's spec.
--
-- Objects are content-addressed and shared (render reuse, identical originals), so an object may go
-- only when nothing live names it. Live: a current thumbnail (thumbs.photo_variants) or a variant row of
-- a job that is not forgotten (thumbs.variants; a forgotten job's rows are deleted when it is forgotten).
--
-- Collection is a two-phase delete in the database (thumbs.gc_objects):
--   pending   a candidate: forgotten, pruned from the history, or uploaded by an attempt whose outcome
--             was refused. Anyone may name it again meanwhile; after the grace (--erase-grace) a
--             collector marks it deleting, unless something names it.
--   deleting  marked. A completion that names a deleting object is refused and its job queued again
--             (complete_jobs): it may have found the object in storage (a HEAD that skipped its upload,
--             or render reuse) just before the delete. fenced_at is stamped by a later transaction than
--             the mark, so every job leased after fenced_at sees the mark at its completion; the
--             collector deletes only once no job leased before fenced_at is still running, after
--             checking again that nothing names the object (a completion that committed before the
--             mark was visible has named it: the mark is dropped).
--   (null)    not a candidate. deleted_at keeps the last deletion: a completion of a job leased before
--             it is refused too (its HEAD may have come before the delete). Such rows are pruned once no
--             running job was leased before their deletion.
--
-- An erasure (thumbs.forget, thumbs.forget_external) is one row per profile of the photo in
-- thumbs.erasures, with the storage keys its photo named; when every key is deleted or kept (something
-- else live names it), the `forgotten` event is written, listing the keys deleted.
--
-- Runs again unchanged on a schema that already has it.

-- Jobs: the forgotten state (scrubbed rows: no source URL), re-render jobs and the spec they were queued
-- for.
ALTER TABLE thumbs.jobs DROP CONSTRAINT IF EXISTS jobs_state_check;
ALTER TABLE thumbs.jobs ADD CONSTRAINT jobs_state_check
  CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'forgotten'));
ALTER TABLE thumbs.jobs ALTER COLUMN source_url DROP NOT NULL;
ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS rerender boolean NOT NULL DEFAULT false;
ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS spec_version bigint;
COMMENT ON COLUMN thumbs.jobs.rerender IS 'Queued by thumbs.rerender: the photo had thumbnails made with an older spec of its profile';
COMMENT ON COLUMN thumbs.jobs.spec_version IS 'Re-render jobs: the version of the profile they were queued for';

-- Retention prunes forgotten rows like the other finished ones.
DROP INDEX IF EXISTS thumbs.jobs_finished_idx;
CREATE INDEX jobs_finished_idx ON thumbs.jobs (finished_at, id)
  WHERE state IN ('succeeded', 'failed', 'cancelled', 'forgotten');
-- A photo without an external id is its source: forgetting it finds every job of the source, finished
-- ones too. (Replaces the index of live jobs by source, which served enqueue and the lease's siblings.)
CREATE INDEX IF NOT EXISTS jobs_source_key_idx ON thumbs.jobs (source_key);
DROP INDEX IF EXISTS thumbs.jobs_live_source_key_idx;
CREATE INDEX IF NOT EXISTS jobs_rerender_idx ON thumbs.jobs (profile, state) WHERE rerender;

-- Is an object named by anything live? Collection asks per candidate.
CREATE INDEX IF NOT EXISTS variants_storage_key_idx ON thumbs.variants (storage_key);
CREATE INDEX IF NOT EXISTS photo_variants_storage_key_idx ON thumbs.photo_variants (storage_key);
-- Earlier events of a forgotten job are scrubbed.
CREATE INDEX IF NOT EXISTS event_log_job_idx ON thumbs.event_log (job_id);

CREATE OR REPLACE FUNCTION thumbs.object_is_named(storage_key text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM thumbs.photo_variants pv WHERE pv.storage_key = object_is_named.storage_key)
      OR EXISTS (SELECT 1 FROM thumbs.variants v WHERE v.storage_key = object_is_named.storage_key);
$$;

-- Profiles are versioned: the version goes up whenever the spec changes. A photo's current thumbnails
-- record the version their job leased with (workers read it with the spec); a newer version makes them
-- stale (thumbs.rerender).
ALTER TABLE thumbs.profiles ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT 1;

CREATE OR REPLACE FUNCTION thumbs.bump_profile_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.version := OLD.version + 1;
  NEW.updated_at := now();
  RETURN NEW;
END;
$$;

DROP TRIGGER IF EXISTS profiles_version ON thumbs.profiles;
CREATE TRIGGER profiles_version
  BEFORE UPDATE OF spec ON thumbs.profiles
  FOR EACH ROW
  WHEN (NEW.spec IS DISTINCT FROM OLD.spec)
  EXECUTE FUNCTION thumbs.bump_profile_version();

ALTER TABLE thumbs.photos ADD COLUMN IF NOT EXISTS spec_version bigint;
-- Thumbnails made before this migration are taken to be of the profile's present spec.
UPDATE thumbs.photos ph SET spec_version = p.version
  FROM thumbs.profiles p WHERE p.name = ph.profile AND ph.spec_version IS NULL;

-- Events: re-render jobs say so; a forgotten event lists the keys deleted.
ALTER TABLE thumbs.event_log ADD COLUMN IF NOT EXISTS rerender boolean NOT NULL DEFAULT false;
ALTER TABLE thumbs.event_log ADD COLUMN IF NOT EXISTS storage_keys jsonb;

CREATE OR REPLACE VIEW thumbs.events AS
  SELECT e.id, e.job_id, e.external_id, e.kind, e.created_at,
         jsonb_build_object('job_id', e.job_id, 'external_id', e.external_id, 'source_url', e.source_url,
                            'profile', e.profile, 'state', e.kind, 'error_code', e.error_code,
                            'error', e.error, 'thumbhash', e.thumbhash,
                            'variants', coalesce(e.variants, '[]'::jsonb), 'attempts', e.attempts,
                            'rerender', e.rerender)
           || CASE WHEN e.kind = 'forgotten'
                   THEN jsonb_build_object('storage_keys', coalesce(e.storage_keys, '[]'::jsonb))
                   ELSE '{}'::jsonb END AS payload
    FROM thumbs.event_log e;

-- A worker of this release refuses completions that name objects being deleted. Collection deletes
-- nothing while a worker of an older release (which does not) is registered.
ALTER TABLE thumbs.workers ADD COLUMN IF NOT EXISTS fences_collection boolean NOT NULL DEFAULT false;

CREATE TABLE IF NOT EXISTS thumbs.gc_objects (
  storage_key       text PRIMARY KEY,
  state             text CHECK (state IN ('pending', 'deleting')),
  -- Why it became a candidate: forgotten, pruned, unclaimed (an attempt's upload whose outcome was
  -- refused) or orphan (found in storage by `thumbd gc`, named by nothing).
  reason            text,
  queued_at         timestamptz NOT NULL DEFAULT now(),
  fenced_at         timestamptz,
  claimed_by        text,
  claim_expires_at  timestamptz,
  attempts          int NOT NULL DEFAULT 0,
  last_error        text,
  deleted_at        timestamptz
);
CREATE INDEX IF NOT EXISTS gc_objects_backlog_idx ON thumbs.gc_objects (state, queued_at)
  WHERE state IS NOT NULL;

CREATE TABLE IF NOT EXISTS thumbs.erasures (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The job the forgotten event names: the one thumbs.forget was given, else the profile's newest.
  job_id       bigint NOT NULL,
  external_id  text,
  profile      text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS thumbs.erasure_keys (
  erasure_id   bigint NOT NULL REFERENCES thumbs.erasures (id) ON DELETE CASCADE,
  storage_key  text NOT NULL,
  -- deleted, or kept (something live names it); null until collection decides.
  outcome      text CHECK (outcome IN ('deleted', 'kept')),
  PRIMARY KEY (erasure_id, storage_key)
);
CREATE INDEX IF NOT EXISTS erasure_keys_undecided_idx ON thumbs.erasure_keys (storage_key)
  WHERE outcome IS NULL;

-- Makes storage keys collection candidates, their grace counted from `since`: again if they were
-- collected or kept before (the time of their last deletion stays, for the fence of complete_jobs). A
-- key already pending or marked is left as it is. Forgetting, retention, refused completions
-- (gc_unclaimed) and `thumbd gc`'s orphans (gc_adopt) all add theirs here. Returns how many were added.
CREATE OR REPLACE FUNCTION thumbs.add_gc_candidates(
  storage_keys text[], reason text, since timestamptz DEFAULT now())
RETURNS bigint
LANGUAGE sql AS $$
  WITH added AS (
    INSERT INTO thumbs.gc_objects AS g (storage_key, state, reason, queued_at)
    SELECT DISTINCT k, 'pending', add_gc_candidates.reason, since FROM unnest(storage_keys) AS k
    ON CONFLICT (storage_key) DO UPDATE
       SET state = 'pending', queued_at = excluded.queued_at, reason = excluded.reason, fenced_at = NULL
     WHERE g.state IS NULL
    RETURNING 1)
  SELECT count(*) FROM added;
$$;

-- Forgets one photo: every job of it (its external id; without one, its source), every profile. Jobs
-- are locked first, in id order, as completions lock them: a completion that came first is seen by the
-- statements that follow (each takes a new snapshot), one that comes later finds its job forgotten and
-- is refused. Returns the number of profiles whose current thumbnails went plus the live (queued or
-- running) jobs forgotten; -1 when nothing of the photo was left to forget.
CREATE OR REPLACE FUNCTION thumbs.forget_photo(photo_external_id text, photo_source text, named_job bigint)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  ids bigint[];
  urls text[];
  live int;
  photo_ids bigint[];
  candidates bigint;
BEGIN
  IF photo_external_id IS NOT NULL THEN
    SELECT coalesce(array_agg(s.id ORDER BY s.id), '{}'), coalesce(array_agg(DISTINCT s.source_url), '{}'),
           count(*) FILTER (WHERE s.state IN ('queued', 'running'))
      INTO ids, urls, live
      FROM (SELECT j.id, j.source_url, j.state FROM thumbs.jobs j
             WHERE j.external_id = photo_external_id AND j.state <> 'forgotten'
             ORDER BY j.id FOR UPDATE) s;
    SELECT coalesce(array_agg(s.id), '{}'), urls || coalesce(array_agg(s.source_url), '{}')
      INTO photo_ids, urls
      FROM (SELECT ph.id, ph.source_url FROM thumbs.photos ph
             WHERE ph.external_id = photo_external_id ORDER BY ph.id FOR UPDATE) s;
  ELSE
    SELECT coalesce(array_agg(s.id ORDER BY s.id), '{}'), coalesce(array_agg(DISTINCT s.source_url), '{}'),
           count(*) FILTER (WHERE s.state IN ('queued', 'running'))
      INTO ids, urls, live
      FROM (SELECT j.id, j.source_url, j.state FROM thumbs.jobs j
             WHERE j.source_key = photo_source AND j.external_id IS NULL AND j.state <> 'forgotten'
             ORDER BY j.id FOR UPDATE) s;
    SELECT coalesce(array_agg(s.id), '{}'), urls || coalesce(array_agg(s.source_url), '{}')
      INTO photo_ids, urls
      FROM (SELECT ph.id, ph.source_url FROM thumbs.photos ph
             WHERE ph.external_id IS NULL AND ph.source_url = photo_source ORDER BY ph.id FOR UPDATE) s;
  END IF;
  IF cardinality(ids) = 0 AND cardinality(photo_ids) = 0 THEN
    RETURN -1;
  END IF;

  -- One erasure per profile of the photo, with the keys its current thumbnails and its jobs named; each
  -- key becomes a candidate (again, if it was collected or kept before).
  WITH profiles AS (
    SELECT p.profile, max(p.job_id) AS newest FROM (
      SELECT ph.profile, ph.job_id FROM thumbs.photos ph WHERE ph.id = ANY (photo_ids)
      UNION ALL
      SELECT j.profile, j.id FROM thumbs.jobs j WHERE j.id = ANY (ids)) p
     GROUP BY p.profile),
  erasures AS (
    INSERT INTO thumbs.erasures (job_id, external_id, profile)
    SELECT CASE WHEN EXISTS (SELECT 1 FROM thumbs.jobs j WHERE j.id = named_job AND j.profile = p.profile)
                THEN named_job ELSE p.newest END,
           photo_external_id, p.profile
      FROM profiles p
    RETURNING id, profile),
  keys AS (
    SELECT j.profile, v.storage_key
      FROM thumbs.variants v JOIN thumbs.jobs j ON j.id = v.job_id WHERE v.job_id = ANY (ids)
    UNION
    SELECT ph.profile, pv.storage_key
      FROM thumbs.photos ph JOIN thumbs.photo_variants pv ON pv.photo_id = ph.id
     WHERE ph.id = ANY (photo_ids)),
  listed AS (
    INSERT INTO thumbs.erasure_keys (erasure_id, storage_key)
    SELECT e.id, k.storage_key FROM erasures e JOIN keys k ON k.profile = e.profile
    RETURNING storage_key)
  SELECT thumbs.add_gc_candidates(array_agg(l.storage_key), 'forgotten') INTO candidates FROM listed l;

  DELETE FROM thumbs.variants v WHERE v.job_id = ANY (ids);
  DELETE FROM thumbs.photos ph WHERE ph.id = ANY (photo_ids);
  UPDATE thumbs.jobs j
     SET state = 'forgotten', finished_at = now(), source_url = NULL, metadata = '{}', thumbhash = NULL,
         render_key = NULL, error_code = NULL, last_error = NULL, attempt_log = '[]', lease_token = NULL,
         lease_expires_at = NULL
   WHERE j.id = ANY (ids);
  UPDATE thumbs.event_log e SET source_url = NULL, thumbhash = NULL, error = NULL
   WHERE e.job_id = ANY (ids);
  DELETE FROM thumbs.originals o WHERE o.url = ANY (urls);
  RETURN cardinality(photo_ids) + live;
END;
$$;

CREATE OR REPLACE FUNCTION thumbs.forget(job_id bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  photo_external_id text;
  photo_source text;
  found_state text;
BEGIN
  SELECT j.external_id, j.source_key, j.state INTO photo_external_id, photo_source, found_state
    FROM thumbs.jobs j WHERE j.id = forget.job_id;
  IF NOT FOUND OR found_state = 'forgotten' THEN
    RETURN false;
  END IF;
  RETURN thumbs.forget_photo(photo_external_id, photo_source, forget.job_id) >= 0;
END;
$$;

CREATE OR REPLACE FUNCTION thumbs.forget_external(external_id text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF external_id IS NULL OR external_id = '' THEN
    RAISE EXCEPTION 'thumbs.forget_external: external_id must not be empty' USING ERRCODE = '22023';
  END IF;
  RETURN greatest(thumbs.forget_photo(forget_external.external_id, NULL, NULL), 0);
END;
$$;

-- Retention: the keys of pruned jobs that nothing else names become candidates.
CREATE OR REPLACE FUNCTION thumbs.prune(older_than interval DEFAULT '7 days', batch_size integer DEFAULT 1000)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  doomed bigint[];
  unnamed text[];
  deleted int;
BEGIN
  SELECT coalesce(array_agg(d.id), '{}') INTO doomed
    FROM (SELECT j.id FROM thumbs.jobs j
           WHERE j.state IN ('succeeded', 'failed', 'cancelled', 'forgotten')
             AND j.finished_at < now() - older_than
           ORDER BY j.finished_at
           LIMIT batch_size
           FOR UPDATE SKIP LOCKED) d;
  SELECT array_agg(DISTINCT v.storage_key) INTO unnamed
    FROM thumbs.variants v
   WHERE v.job_id = ANY (doomed)
     AND NOT EXISTS (SELECT 1 FROM thumbs.photo_variants pv WHERE pv.storage_key = v.storage_key)
     AND NOT EXISTS (SELECT 1 FROM thumbs.variants o
                      WHERE o.storage_key = v.storage_key AND NOT (o.job_id = ANY (doomed)));
  DELETE FROM thumbs.jobs j WHERE j.id = ANY (doomed);
  GET DIAGNOSTICS deleted = ROW_COUNT;
  PERFORM thumbs.add_gc_candidates(unnamed, 'pruned');
  RETURN deleted;
END;
$$;

-- Re-rendering: photos whose current thumbnails of the profile were made with an older version get a job,
-- at a priority below every default so that fresh uploads go first. Not again for a photo that has a
-- live job of the profile, or whose re-render for this spec failed for good.
CREATE OR REPLACE FUNCTION thumbs.rerender(profile text, batch_size integer DEFAULT 1000) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  present bigint;
  added int;
BEGIN
  SELECT p.version INTO present FROM thumbs.profiles p WHERE p.name = rerender.profile;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'thumbs.rerender: no profile named %', rerender.profile USING ERRCODE = '22023';
  END IF;
  WITH stale AS (
    SELECT ph.external_id, ph.source_url FROM thumbs.photos ph
     WHERE ph.profile = rerender.profile AND ph.spec_version IS DISTINCT FROM present
       AND NOT EXISTS (
         SELECT 1 FROM thumbs.jobs j
          WHERE ph.external_id IS NOT NULL AND j.external_id = ph.external_id AND j.profile = ph.profile
            AND (j.state IN ('queued', 'running')
                 OR (j.rerender AND j.state = 'failed' AND j.spec_version = present)))
       AND NOT EXISTS (
         SELECT 1 FROM thumbs.jobs j
          WHERE ph.external_id IS NULL AND j.source_key = ph.source_url AND j.external_id IS NULL
            AND j.profile = ph.profile
            AND (j.state IN ('queued', 'running')
                 OR (j.rerender AND j.state = 'failed' AND j.spec_version = present)))
     ORDER BY ph.id
     LIMIT batch_size),
  inserted AS (
    INSERT INTO thumbs.jobs AS j (source_url, profile, priority, external_id, rerender, spec_version)
    SELECT s.source_url, rerender.profile, -1000, s.external_id, true, present FROM stale s
    ON CONFLICT DO NOTHING
    RETURNING 1)
  SELECT count(*) INTO added FROM inserted;
  IF added > 0 THEN
    PERFORM pg_notify('thumbs_jobs', '');
  END IF;
  RETURN added;
END;
$$;

-- Cancelled events of re-render jobs say so.
CREATE OR REPLACE FUNCTION thumbs.cancel(job_id bigint) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  WITH cancelled AS (
    UPDATE thumbs.jobs j
       SET state = 'cancelled', finished_at = now(), lease_token = NULL, lease_expires_at = NULL
     WHERE j.id = cancel.job_id AND j.state IN ('queued', 'running')
    RETURNING j.id, j.external_id, j.source_url, j.profile, j.attempts, j.rerender),
  written AS (
    INSERT INTO thumbs.event_log (job_id, external_id, kind, source_url, profile, attempts, rerender)
    SELECT c.id, c.external_id, 'cancelled', thumbs.redact_url(c.source_url), c.profile, c.attempts,
           c.rerender
      FROM cancelled c
    RETURNING id)
  SELECT count(pg_notify('thumbs_events', w.id::text)) > 0 FROM written w;
$$;

CREATE OR REPLACE VIEW thumbs.queue_overview AS
  SELECT s.state, count(j.id) AS jobs, now() - min(j.created_at) AS oldest_age
    FROM unnest(ARRAY['queued', 'running', 'succeeded', 'failed', 'cancelled', 'forgotten'])
         WITH ORDINALITY AS s(state, ord)
    LEFT JOIN thumbs.jobs j ON j.state = s.state
   GROUP BY s.state, s.ord
   ORDER BY s.ord;

-- Per profile: its photos, how many have thumbnails of an older spec, and the re-render jobs.
CREATE OR REPLACE VIEW thumbs.rerender_overview AS
  SELECT p.name AS profile,
         (SELECT count(*) FROM thumbs.photos ph WHERE ph.profile = p.name) AS photos,
         (SELECT count(*) FROM thumbs.photos ph
           WHERE ph.profile = p.name AND ph.spec_version IS DISTINCT FROM p.version) AS stale,
         (SELECT count(*) FROM thumbs.jobs j WHERE j.rerender AND j.profile = p.name AND j.state = 'queued')
           AS queued,
         (SELECT count(*) FROM thumbs.jobs j WHERE j.rerender AND j.profile = p.name AND j.state = 'running')
           AS running,
         (SELECT count(*) FROM thumbs.jobs j WHERE j.rerender AND j.profile = p.name AND j.state = 'succeeded')
           AS succeeded,
         (SELECT count(*) FROM thumbs.jobs j
           WHERE j.rerender AND j.profile = p.name AND j.state = 'failed'
             AND j.spec_version = p.version) AS failed
    FROM thumbs.profiles p
   ORDER BY p.name;

-- What collection has to do: for people, and for `thumbd gc --dry-run`.
CREATE OR REPLACE VIEW thumbs.gc_overview AS
  SELECT count(*) FILTER (WHERE g.state = 'pending') AS pending,
         count(*) FILTER (WHERE g.state = 'deleting') AS deleting,
         count(*) FILTER (WHERE g.state = 'deleting' AND g.last_error IS NOT NULL) AS failing,
         min(g.queued_at) FILTER (WHERE g.state IS NOT NULL) AS oldest,
         (SELECT count(*) FROM thumbs.erasures) AS erasures_open
    FROM thumbs.gc_objects g
   WHERE g.state IS NOT NULL;

CREATE INDEX IF NOT EXISTS gc_objects_idle_idx ON thumbs.gc_objects (deleted_at) WHERE state IS NULL;
