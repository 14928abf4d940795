-- The thumbs schema after all migrations: written by scripts/dump-schema.sh, checked by
-- SchemaSnapshotTests. Not a migration, and never applied.

CREATE SCHEMA thumbs;

CREATE FUNCTION thumbs.add_gc_candidates(storage_keys text[], reason text, since timestamp with time zone DEFAULT now()) RETURNS bigint
    LANGUAGE sql
    AS $$
  WITH added AS (
    INSERT INTO thumbs.gc_objects AS g (storage_key, state, reason, queued_at)
    SELECT DISTINCT k, 'pending', add_gc_candidates.reason, since FROM unnest(storage_keys) AS k
    ON CONFLICT (storage_key) DO UPDATE
       SET state = 'pending', queued_at = excluded.queued_at, reason = excluded.reason, fenced_at = NULL
     WHERE g.state IS NULL
    RETURNING 1)
  SELECT count(*) FROM added;
$$;

COMMENT ON FUNCTION thumbs.add_gc_candidates(storage_keys text[], reason text, since timestamp with time zone) IS 'Makes storage keys collection candidates (pending, with the reason given), their grace counted from since; a key collected or kept before becomes one again, keeping the time of its last deletion for the completion fence, and a key already pending or marked is left as it is. Every source of candidates goes through it. Returns how many were added.';

CREATE FUNCTION thumbs.append_attempt(log jsonb, entry jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT CASE WHEN jsonb_array_length(log) >= 10 THEN (log - 0) || jsonb_build_array(entry)
              ELSE log || jsonb_build_array(entry) END;
$$;

COMMENT ON FUNCTION thumbs.append_attempt(log jsonb, entry jsonb) IS 'Appends an entry to a job''s attempt log, dropping the oldest beyond the last 10, so that the log stays bounded.';

CREATE FUNCTION thumbs.bump_profile_version() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.version := OLD.version + 1;
  NEW.updated_at := now();
  RETURN NEW;
END;
$$;

COMMENT ON FUNCTION thumbs.bump_profile_version() IS 'Trigger function of profiles_version: raises a profile''s version, and sets updated_at, whenever its spec changes, so that thumbnails made with the older spec are known to be stale.';

CREATE FUNCTION thumbs.cancel(job_id bigint) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION thumbs.cancel(job_id bigint) IS 'Cancels a queued or running job and writes its cancelled event; false when the job was neither queued nor running. A running job''s worker finds its lease gone at its next heartbeat and discards its work. SECURITY DEFINER, for the backend''s role.';

CREATE FUNCTION thumbs.check_profile(spec jsonb) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $_$
DECLARE
  variant_keys text[] := ARRAY['animated', 'crop', 'fit', 'format', 'height', 'name', 'progressive',
                               'quality', 'speed', 'subsampling', 'width'];
  animation jsonb := jsonb_strip_nulls(spec -> 'animation');
  problems text[] := '{}';
  names text[] := '{}';
  item jsonb;
  v jsonb;
  n int := 0;
  unknown text;
  name text;
  label text;
  fit text;
  format text;
  number numeric;
  problem text;
BEGIN
  IF spec IS NULL THEN
    RETURN ARRAY['spec is not JSON'];
  END IF;
  IF jsonb_typeof(spec) <> 'object' THEN
    RETURN ARRAY['spec must be a JSON object'];
  END IF;
  SELECT min(k COLLATE "C") INTO unknown FROM jsonb_object_keys(spec) AS k WHERE k NOT IN ('animation', 'poster', 'variants');
  IF unknown IS NOT NULL THEN
    RETURN ARRAY[format('unknown key "%s" (known: animation, poster, variants)', unknown)];
  END IF;
  IF jsonb_typeof(spec -> 'variants') IS DISTINCT FROM 'array' OR jsonb_array_length(spec -> 'variants') = 0 THEN
    RETURN ARRAY['spec needs a non-empty "variants" array'];
  END IF;
  IF coalesce(jsonb_typeof(spec -> 'poster'), 'null') <> 'null'
     AND NOT coalesce(jsonb_typeof(spec -> 'poster') = 'object'
                       AND (SELECT array_agg(k) FROM jsonb_object_keys(spec -> 'poster') AS k) = ARRAY['at']
                       AND jsonb_typeof(spec -> 'poster' -> 'at') = 'number'
                       AND (spec -> 'poster' ->> 'at')::numeric BETWEEN 0 AND 86400, false) THEN
    RETURN ARRAY['"poster" must be {"at": SECONDS}, SECONDS a number from 0 to 86400'];
  END IF;
  IF coalesce(jsonb_typeof(animation), 'null') <> 'null'
     AND NOT coalesce(jsonb_typeof(animation) = 'object'
                       AND NOT EXISTS (SELECT FROM jsonb_object_keys(animation) AS k
                                       WHERE k NOT IN ('max_frames', 'max_seconds', 'preview_seconds', 'fps'))
                       AND (NOT animation ? 'max_frames'
                            OR thumbs.spec_integer(animation -> 'max_frames') BETWEEN 1 AND 1000)
                       AND (NOT animation ? 'max_seconds'
                            OR (jsonb_typeof(animation -> 'max_seconds') = 'number'
                                AND (animation ->> 'max_seconds')::numeric > 0
                                AND (animation ->> 'max_seconds')::numeric <= 600))
                       AND (NOT animation ? 'preview_seconds'
                            OR (jsonb_typeof(animation -> 'preview_seconds') = 'number'
                                AND (animation ->> 'preview_seconds')::numeric > 0
                                AND (animation ->> 'preview_seconds')::numeric <= 60))
                       AND (NOT animation ? 'fps'
                            OR thumbs.spec_integer(animation -> 'fps') BETWEEN 1 AND 30), false) THEN
    RETURN ARRAY['"animation" must be {"max_frames": N, "max_seconds": S, "preview_seconds": P, "fps": F}, N an '
                 || 'integer from 1 to 1000, S a number above 0 and at most 600, P a number above 0 and at most '
                 || '60, F an integer from 1 to 30'];
  END IF;
  FOR item IN SELECT e FROM jsonb_array_elements(spec -> 'variants') AS e LOOP
    n := n + 1;
    IF jsonb_typeof(item) <> 'object' THEN
      problems := problems || format('variant #%s: must be a JSON object', n);
      CONTINUE;
    END IF;
    v := jsonb_strip_nulls(item);
    name := CASE WHEN jsonb_typeof(v -> 'name') = 'string' THEN v ->> 'name' END;
    label := CASE WHEN name IS NOT NULL THEN format('variant ''%s''', name) ELSE format('variant #%s', n) END;
    SELECT min(k COLLATE "C") INTO unknown FROM jsonb_object_keys(v) AS k WHERE k <> ALL (variant_keys);
    fit := coalesce(CASE WHEN jsonb_typeof(v -> 'fit') = 'string' THEN v ->> 'fit' END,
                    CASE WHEN v ? 'fit' THEN '' ELSE 'inside' END);
    format := coalesce(CASE WHEN jsonb_typeof(v -> 'format') = 'string' THEN v ->> 'format' END,
                       CASE WHEN v ? 'format' THEN '' ELSE 'jpeg' END);
    problem := CASE
      WHEN unknown IS NOT NULL THEN
        format('unknown key "%s" (known: %s)', unknown, array_to_string(variant_keys, ', '))
      WHEN name IS NULL OR name !~ '^[a-z0-9_-]{1,64}$' THEN
        '"name" must be 1-64 characters of a-z, 0-9, ''_'' or ''-'''
      WHEN name = ANY (names) THEN 'name is used twice'
      WHEN coalesce(thumbs.spec_integer(v -> 'width') NOT BETWEEN 1 AND 8192, true)
        OR coalesce(thumbs.spec_integer(v -> 'height') NOT BETWEEN 1 AND 8192, true) THEN
        '"width" and "height" must be integers from 1 to 8192'
      WHEN fit NOT IN ('inside', 'cover', 'fill') THEN '"fit" must be one of inside, cover, fill'
      WHEN format NOT IN ('jpeg', 'webp', 'png', 'avif', 'auto') THEN
        '"format" must be one of jpeg, webp, png, avif, auto'
      WHEN v ? 'quality' AND coalesce(thumbs.spec_integer(v -> 'quality') NOT BETWEEN 1 AND 100, true) THEN
        '"quality" must be an integer from 1 to 100'
      WHEN v ? 'subsampling' AND (jsonb_typeof(v -> 'subsampling') <> 'string'
                                  OR v ->> 'subsampling' NOT IN ('4:2:0', '4:4:4')) THEN
        '"subsampling" must be one of 4:2:0, 4:4:4'
      WHEN v ? 'progressive' AND jsonb_typeof(v -> 'progressive') <> 'boolean' THEN
        '"progressive" must be true or false'
      WHEN format <> 'jpeg' AND (v ? 'subsampling' OR v ? 'progressive') THEN
        '"subsampling" and "progressive" apply to "format": "jpeg" only'
      WHEN format <> 'avif' AND v ? 'speed' THEN '"speed" applies to "format": "avif" only'
      WHEN v ? 'speed' AND coalesce(thumbs.spec_integer(v -> 'speed') NOT BETWEEN 0 AND 9, true) THEN
        '"speed" must be an integer from 0 to 9'
      WHEN v ? 'crop' AND (jsonb_typeof(v -> 'crop') <> 'string'
                           OR v ->> 'crop' NOT IN ('centre', 'attention', 'entropy')) THEN
        '"crop" must be one of centre, attention, entropy'
      WHEN fit <> 'cover' AND v ? 'crop' THEN '"crop" applies to "fit": "cover" only'
      WHEN v ? 'animated' AND jsonb_typeof(v -> 'animated') <> 'boolean' THEN '"animated" must be true or false'
      WHEN v -> 'animated' = 'true' AND format <> 'webp' THEN '"animated": true needs "format": "webp"'
    END;
    IF problem IS NOT NULL THEN
      problems := problems || format('%s: %s', label, problem);
    END IF;
    IF name IS NOT NULL AND name ~ '^[a-z0-9_-]{1,64}$' AND unknown IS NULL THEN
      names := names || name;
    END IF;
  END LOOP;
  RETURN problems;
END;
$_$;

COMMENT ON FUNCTION thumbs.check_profile(spec jsonb) IS 'What is wrong with a profile spec, in the worker''s own words: at most one problem per variant, every variant''s; empty when the spec is valid. The profiles_checked trigger refuses a spec with problems; call it to check a spec without saving it.';

CREATE FUNCTION thumbs.collect_superseded() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM thumbs.add_gc_candidates(ARRAY[OLD.storage_key], 'superseded');
  RETURN NULL;
END;
$$;

COMMENT ON FUNCTION thumbs.collect_superseded() IS 'Trigger function of photo_variants_replaced and photo_variants_dropped: a storage key a current thumbnail lets go of (an edit, a re-render, a variant the profile dropped) becomes a collection candidate, reason superseded. A trigger rather than part of the completion statement, so that it sees the replaced row even when two completions of one photo race.';

CREATE FUNCTION thumbs.enable_webhook(url text) RETURNS boolean
    LANGUAGE sql
    AS $$
  WITH enabled AS (
    UPDATE thumbs.webhook_endpoints w SET disabled_at = NULL, disabled_reason = NULL
     WHERE w.url = enable_webhook.url AND w.disabled_at IS NOT NULL
    RETURNING 1)
  SELECT count(*) > 0 FROM enabled;
$$;

COMMENT ON FUNCTION thumbs.enable_webhook(url text) IS 'Turns back on an endpoint that answered 410 Gone; returns whether it was off. Deliveries the 410 stopped stay stopped: thumbs.replay_webhooks sends the events from while it was off.';

CREATE FUNCTION thumbs.enqueue(source_url text, profile text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), metadata jsonb DEFAULT '{}'::jsonb, external_id text DEFAULT NULL::text, owner text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION thumbs.enqueue(source_url text, profile text, priority integer, run_at timestamp with time zone, metadata jsonb, external_id text, owner text) IS 'The backend''s way in: queues a job for a source URL and profile and returns its id, or the id of the live job that already stands for the same photo (its external id, else its source''s identity) and profile, a queued one taking the newer URL. Refuses a source that can never be fetched, an empty external_id or owner and an unknown profile (SQLSTATE 22023). SECURITY DEFINER with a pinned search path, so a backend role may call it without being able to write jobs itself.';

CREATE FUNCTION thumbs.events_after(after text DEFAULT NULL::text, max_events integer DEFAULT 100) RETURNS TABLE(cursor text, id bigint, job_id bigint, external_id text, kind text, created_at timestamp with time zone, payload jsonb)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  SELECT l.txid::text || '/' || l.id::text, e.id, e.job_id, e.external_id, e.kind, e.created_at, e.payload
    FROM thumbs.event_log l JOIN thumbs.events e ON e.id = l.id
   WHERE l.txid < pg_snapshot_xmin(pg_current_snapshot())
     AND (after IS NULL
          OR (l.txid, l.id) > (split_part(after, '/', 1)::xid8, split_part(after, '/', 2)::bigint))
   ORDER BY l.txid, l.id
   LIMIT max_events;
$$;

COMMENT ON FUNCTION thumbs.events_after(after text, max_events integer) IS 'Completion events in commit order after a cursor (NULL: from the oldest kept), at most max_events; pass the last row''s cursor next time. Only events of transactions that ended before every running one began are handed out, so none can commit behind a cursor, and a transaction left open anywhere holds delivery back without losing any. SECURITY DEFINER: the backend''s role reads the events without reading the table.';

CREATE FUNCTION thumbs.expire_workers() RETURNS integer
    LANGUAGE sql
    AS $$
  WITH gone AS (
    DELETE FROM thumbs.workers
     WHERE last_heartbeat_at < now() - greatest(lease_ttl * 3, interval '1 minute')
    RETURNING 1)
  SELECT count(*)::int FROM gone;
$$;

COMMENT ON FUNCTION thumbs.expire_workers() IS 'Deletes the registry rows of workers that stopped heartbeating three lease TTLs ago (at least a minute): a worker that was killed or lost never deletes its own. Returns how many.';

CREATE FUNCTION thumbs.fill_event_metadata() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  SELECT j.metadata INTO NEW.metadata FROM thumbs.jobs j WHERE j.id = NEW.job_id;
  RETURN NEW;
END;
$$;

COMMENT ON FUNCTION thumbs.fill_event_metadata() IS 'Trigger function of event_log_metadata: an event written without metadata (by thumbs.cancel, or a worker of an older release) gets its job''s.';

CREATE FUNCTION thumbs.forget(job_id bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION thumbs.forget(job_id bigint) IS 'Forgets the whole photo a job belongs to (its external id, else its source), every profile and every job: see thumbs.forget_photo. False when the job does not exist or is already forgotten. SECURITY DEFINER, for the backend''s role.';

CREATE FUNCTION thumbs.forget_external(external_id text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
  IF external_id IS NULL OR external_id = '' THEN
    RAISE EXCEPTION 'thumbs.forget_external: external_id must not be empty' USING ERRCODE = '22023';
  END IF;
  RETURN greatest(thumbs.forget_photo(forget_external.external_id, NULL, NULL), 0);
END;
$$;

COMMENT ON FUNCTION thumbs.forget_external(external_id text) IS 'Forgets a photo by the backend''s id, every profile and every job, also once its job history was pruned: see thumbs.forget_photo. Returns the number of profiles whose current thumbnails went plus the live jobs forgotten (0: nothing was left). SECURITY DEFINER, for the backend''s role.';

CREATE FUNCTION thumbs.forget_photo(photo_external_id text, photo_source text, named_job bigint) RETURNS integer
    LANGUAGE plpgsql
    AS $$
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

COMMENT ON FUNCTION thumbs.forget_photo(photo_external_id text, photo_source text, named_job bigint) IS 'The work of thumbs.forget and thumbs.forget_external: locks the photo''s jobs in id order (as completions lock them), records one erasure per profile with the keys the photo named and makes them collection candidates, deletes its variant and current rows, and scrubs its jobs (state forgotten), their events and its originals rows. Returns the profiles with current thumbnails plus the live jobs forgotten, or -1 when nothing of the photo was left.';

CREATE FUNCTION thumbs.lease_only_readable_sources() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM thumbs.workers w
              WHERE w.id = NEW.leased_by AND NOT ('s3' = ANY (w.source_schemes))) THEN
    RETURN NULL;
  END IF;
  RETURN NEW;
END;
$$;

COMMENT ON FUNCTION thumbs.lease_only_readable_sources() IS 'Trigger function of lease_only_readable_sources: skips the lease of an s3:// job by a worker whose registry row does not list s3 (a worker of an older release, during a rolling upgrade), so the job stays queued with its attempts untouched for a worker that reads it. A worker not yet registered is let through.';

CREATE FUNCTION thumbs.object_is_named(storage_key text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
  SELECT EXISTS (SELECT 1 FROM thumbs.photo_variants pv WHERE pv.storage_key = object_is_named.storage_key);
$$;

COMMENT ON FUNCTION thumbs.object_is_named(storage_key text) IS 'Whether a current thumbnail (thumbs.photo_variants) names the storage key: since migration 0015 the only thing that keeps an object from collection; the job history''s thumbs.variants rows do not.';

CREATE FUNCTION thumbs.prune(older_than interval DEFAULT '7 days'::interval, batch_size integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql
    AS $$
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
     AND NOT EXISTS (SELECT 1 FROM thumbs.gc_objects g
                      WHERE g.storage_key = v.storage_key AND g.deleted_at IS NOT NULL);
  DELETE FROM thumbs.jobs j WHERE j.id = ANY (doomed);
  GET DIAGNOSTICS deleted = ROW_COUNT;
  PERFORM thumbs.add_gc_candidates(unnamed, 'pruned');
  RETURN deleted;
END;
$$;

COMMENT ON FUNCTION thumbs.prune(older_than interval, batch_size integer) IS 'Retention: deletes up to batch_size jobs that ended (succeeded, failed, cancelled or forgotten) before now() - older_than, their variant rows by cascade; the keys they named that no current thumbnail names become collection candidates. Short and SKIP LOCKED, so safe beside running workers; returns how many, and is called until it returns less than batch_size.';

CREATE FUNCTION thumbs.prune_events(older_than interval DEFAULT '30 days'::interval, batch_size integer DEFAULT 1000) RETURNS integer
    LANGUAGE sql
    AS $$
  WITH doomed AS (
    SELECT e.id FROM thumbs.event_log e
     WHERE e.id IN (SELECT o.id FROM thumbs.event_log o ORDER BY o.id LIMIT batch_size)
       AND e.created_at < now() - older_than
     FOR UPDATE SKIP LOCKED),
  deleted AS (
    DELETE FROM thumbs.event_log e USING doomed WHERE e.id = doomed.id RETURNING 1)
  SELECT count(*)::int FROM deleted;
$$;

COMMENT ON FUNCTION thumbs.prune_events(older_than interval, batch_size integer) IS 'Event retention: deletes the events older than older_than among the batch_size oldest ids (ids follow time closely enough), so each call reads one batch and the table needs no index for it; their webhook deliveries go by cascade. Returns how many; call it again while it returns batch_size.';

CREATE FUNCTION thumbs.prune_originals(older_than interval DEFAULT '7 days'::interval, batch_size integer DEFAULT 1000) RETURNS integer
    LANGUAGE sql
    AS $$
  WITH doomed AS (
    SELECT url FROM thumbs.originals
     WHERE checked_at < now() - older_than
     ORDER BY checked_at
     LIMIT batch_size
     FOR UPDATE SKIP LOCKED),
  deleted AS (
    DELETE FROM thumbs.originals o USING doomed WHERE o.url = doomed.url RETURNING 1)
  SELECT count(*)::int FROM deleted;
$$;

COMMENT ON FUNCTION thumbs.prune_originals(older_than interval, batch_size integer) IS 'Deletes up to batch_size thumbs.originals rows no worker has confirmed (checked_at) for older_than; workers call it with the same age as thumbs.prune. Returns how many.';

CREATE FUNCTION thumbs.redact_url(url text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  -- Most URLs have neither a userinfo nor a query: no regular expression for them.
  SELECT CASE WHEN strpos(url, '@') = 0 AND strpos(url, '=') = 0 THEN url ELSE
    regexp_replace(
      regexp_replace(url, '^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@[:space:]:"'']*):[^/?#@[:space:]"'']*@',
                     '\1:****@'),
      '([?&](X-Amz-Credential|X-Amz-Signature|X-Amz-Security-Token|AWSAccessKeyId|Signature)=)[^&#[:space:]"'']*',
      '\1****', 'g') END;
$$;

COMMENT ON FUNCTION thumbs.redact_url(url text) IS 'A URL as thumbd shows it: a userinfo password and a presigned URL''s credential, signature and token masked as ****, the same answers as the worker''s own masking. SQL and not STRICT, so that PostgreSQL can inline it into the statements that write events.';

CREATE FUNCTION thumbs.refuse_invalid_profile() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  problems text[] := thumbs.check_profile(NEW.spec);
BEGIN
  IF cardinality(problems) > 0 THEN
    RAISE EXCEPTION 'profile ''%'' is invalid: %', NEW.name, array_to_string(problems, '; ')
      USING ERRCODE = '23514', HINT = 'SELECT thumbs.check_profile(spec) checks a spec without saving it';
  END IF;
  RETURN NEW;
END;
$$;

COMMENT ON FUNCTION thumbs.refuse_invalid_profile() IS 'Trigger function of profiles_checked: refuses (SQLSTATE 23514) a profile whose spec thumbs.check_profile finds problems in, naming them, so that a mistake fails when it is saved rather than in every job of the profile.';

CREATE FUNCTION thumbs.replay_webhooks(since timestamp with time zone, url text DEFAULT NULL::text) RETURNS integer
    LANGUAGE sql
    AS $$
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

COMMENT ON FUNCTION thumbs.replay_webhooks(since timestamp with time zone, url text) IS 'Queues again, for one endpoint (NULL: every endpoint that is on), every kept event created at or after since: delivered, given-up and stopped deliveries are sent again under the same webhook-id, and deliveries are added for events from before the endpoint existed or from while it was off. Returns how many.';

CREATE FUNCTION thumbs.rerender(profile text, batch_size integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  present bigint;
  added int;
BEGIN
  SELECT p.version INTO present FROM thumbs.profiles p WHERE p.name = rerender.profile;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'thumbs.rerender: no profile named %', rerender.profile USING ERRCODE = '22023';
  END IF;
  WITH stale AS (
    SELECT ph.external_id, coalesce(ph.last_source_url, ph.source_url) AS source_url, ph.metadata
      FROM thumbs.photos ph
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
    INSERT INTO thumbs.jobs AS j (source_url, profile, priority, external_id, rerender, spec_version, metadata)
    SELECT s.source_url, rerender.profile, -1000, s.external_id, true, present, coalesce(s.metadata, '{}')
      FROM stale s
    ON CONFLICT DO NOTHING
    RETURNING 1)
  SELECT count(*) INTO added FROM inserted;
  IF added > 0 THEN
    PERFORM pg_notify('thumbs_jobs', '');
  END IF;
  RETURN added;
END;
$$;

COMMENT ON FUNCTION thumbs.rerender(profile text, batch_size integer) IS 'Queues a re-render job, below every upload''s priority, for up to batch_size photos whose current thumbnails of the profile were made with an older spec; it fetches the URL they were made from, as enqueued, and carries that job''s metadata. Skips photos with a live job of the profile and those whose re-render failed for good under the present spec; call it until it returns 0. SECURITY DEFINER, for the backend''s role.';

CREATE FUNCTION thumbs.retry(job_id bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
  UPDATE thumbs.jobs j
     SET state = 'queued', attempts = 0, run_at = now(), error_code = NULL, last_error = NULL,
         finished_at = NULL, started_at = NULL
   WHERE j.id = retry.job_id AND j.state IN ('failed', 'cancelled');
  IF FOUND THEN
    PERFORM pg_notify('thumbs_jobs', '');
  END IF;
  RETURN FOUND;
EXCEPTION WHEN unique_violation THEN
  RETURN false;
END;
$$;

COMMENT ON FUNCTION thumbs.retry(job_id bigint) IS 'Puts a failed or cancelled job back in the queue, due now, with its attempts reset and its error cleared (the attempt log is kept). False for any other state, or when the unique indexes refuse it: the photo already has a queued job of the profile (without an external id, a queued or running one). SECURITY DEFINER, for the backend''s role.';

CREATE FUNCTION thumbs.scrub_forgotten_events() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  UPDATE thumbs.event_log e SET metadata = '{}' WHERE e.job_id = NEW.id AND e.metadata <> '{}';
  RETURN NEW;
END;
$$;

COMMENT ON FUNCTION thumbs.scrub_forgotten_events() IS 'Trigger function of jobs_forgotten_events: when a job is forgotten, its earlier events lose their metadata along with what thumbs.forget_photo scrubs.';

CREATE FUNCTION thumbs.set_source_key() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.source_key := thumbs.source_identity(NEW.source_url);
  RETURN NEW;
END;
$$;

COMMENT ON FUNCTION thumbs.set_source_key() IS 'Trigger function of jobs_source_key: sets thumbs.jobs.source_key to thumbs.source_identity(source_url) when a job is inserted or its source_url changes, and only then.';

CREATE FUNCTION thumbs.source_identity(url text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
  hash int := strpos(url, '#');
  before_fragment text := CASE WHEN hash > 0 THEN left(url, hash - 1) ELSE url END;
  question int := strpos(before_fragment, '?');
  kept text;
BEGIN
  IF question = 0 THEN
    RETURN url;
  END IF;
  SELECT string_agg(p, '&' ORDER BY n) INTO kept
    FROM unnest(string_to_array(substr(before_fragment, question + 1), '&')) WITH ORDINALITY AS t(p, n)
   WHERE split_part(p, '=', 1) NOT IN (
     'X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders',
     'X-Amz-Signature', 'X-Amz-Security-Token', 'AWSAccessKeyId', 'Signature', 'Expires');
  RETURN left(before_fragment, question - 1)
    || CASE WHEN coalesce(kept, '') = '' THEN '' ELSE '?' || kept END
    || CASE WHEN hash > 0 THEN substr(url, hash) ELSE '' END;
END;
$$;

COMMENT ON FUNCTION thumbs.source_identity(url text) IS 'A source URL''s identity: the URL without a presigned URL''s signing parameters (SigV4''s X-Amz-*, SigV2''s AWSAccessKeyId, Signature and Expires), every other part kept. What unique enqueue, shared downloads, photos and forgetting compare, so that two signings of one object are one source; the worker''s own rule gives the same answers. PL/pgSQL, which keeps its plans for the session.';

CREATE FUNCTION thumbs.source_problem(url text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $_$
DECLARE
  sep int;
  scheme text;
  rest text;
  authority text;
  parts text[];
BEGIN
  IF url IS NULL OR url = '' THEN
    RETURN 'is empty';
  END IF;
  sep := strpos(url, '://');
  IF sep < 2 OR left(url, sep - 1) !~ '^[A-Za-z][A-Za-z0-9+.-]*$' THEN
    RETURN 'is not an absolute URL (scheme://host/path)';
  END IF;
  scheme := lower(left(url, sep - 1));
  IF scheme NOT IN ('http', 'https', 's3') THEN
    RETURN format('has the scheme %s, which thumbd does not read (http, https, s3)', scheme);
  END IF;
  rest := substr(url, sep + 3);
  IF scheme = 's3' THEN
    -- s3://BUCKET/KEY: a bucket before the first slash, a key after it.
    IF strpos(rest, '/') < 2 OR strpos(rest, '/') = length(rest) THEN
      RETURN 'does not name an object (s3://BUCKET/KEY)';
    END IF;
    RETURN NULL;
  END IF;
  -- (An S3 key is read byte for byte, spaces included; a URL is not.)
  IF url ~ '[\x01-\x20\x7f]' THEN
    RETURN 'contains a space or a control character';
  END IF;
  -- After the userinfo (up to the last @): a host name or address, or [IPv6], and an optional port.
  authority := substring(rest FROM '^[^/?#]*');
  parts := regexp_match(regexp_replace(authority, '^.*@', ''), '^(\[[^]]*\]|[^:@\[\]]*)(:([0-9]*))?$');
  IF parts IS NULL THEN
    RETURN 'has an invalid host or port';
  END IF;
  IF parts[1] IN ('', '[]') THEN
    RETURN 'has no host';
  END IF;
  IF parts[3] <> '' THEN
    IF length(parts[3]) > 5 OR parts[3]::int NOT BETWEEN 1 AND 65535 THEN
      RETURN 'has an invalid port';
    END IF;
  END IF;
  RETURN NULL;
END;
$_$;

COMMENT ON FUNCTION thumbs.source_problem(url text) IS 'Why a source URL can never be fetched (not an absolute URL, a scheme thumbd does not read, no host, a bad port, an s3:// URL without a key, a space or control character in an http(s) URL), or NULL; thumbs.enqueue refuses such a source. The worker''s own check gives the same answers; what only a fetch can tell (a private address, a redirect) stays the worker''s.';

CREATE FUNCTION thumbs.spec_integer(value jsonb) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT CASE WHEN jsonb_typeof(value) = 'number' AND value::text::numeric = trunc(value::text::numeric)
                   AND abs(value::text::numeric) < 1e9
              THEN value::text::numeric END;
$$;

COMMENT ON FUNCTION thumbs.spec_integer(value jsonb) IS 'A JSON number that is whole (82, 82.0 and 8.2e1 alike), as numeric, else NULL: how thumbs.check_profile reads integer settings, as the worker does.';

CREATE FUNCTION thumbs.take_turn() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
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
    -- Already in line: the round after its last job's.
    (SELECT j.turn / 2 * 2 + 3 FROM thumbs.jobs j
      WHERE coalesce(j.owner, '') = coalesce(NEW.owner, '') AND j.priority = NEW.priority
        AND j.state = 'queued' AND j.turn IS NOT NULL
      ORDER BY j.turn DESC
      LIMIT 1),
    -- New to the line: first in the head's round.
    (SELECT j.turn / 2 * 2 FROM thumbs.jobs j
      WHERE j.state = 'queued' AND j.turn IS NOT NULL AND j.priority = NEW.priority
      ORDER BY j.priority DESC, j.turn, j.id
      LIMIT 1),
    0);
  RETURN NEW;
END;
$$;

COMMENT ON FUNCTION thumbs.take_turn() IS 'Trigger function of jobs_take_turn_insert and jobs_take_turn_update: gives a queued, due job its turn (see thumbs.jobs.turn), none while its run_at is ahead, and keeps a queued job''s turn while its priority and owner stay. Its planner settings allow index scans only: its plans are kept for the session, perhaps made while the table was nearly empty.';

CREATE TABLE thumbs.photo_variants (
    photo_id bigint NOT NULL,
    name text NOT NULL,
    width integer NOT NULL,
    height integer NOT NULL,
    format text NOT NULL,
    bytes bigint NOT NULL,
    storage_key text NOT NULL
);

COMMENT ON TABLE thumbs.photo_variants IS 'The current thumbnails of each thumbs.photos row, copied from the variant rows of the job it names: what thumbs.current_variants shows and render reuse offers. The only rows that keep a storage object from collection: triggers make a key these rows let go of a collection candidate.';

COMMENT ON COLUMN thumbs.photo_variants.storage_key IS 'The object''s key under the storage root. While any row here names it, collection keeps the object; a key a row lets go of becomes a collection candidate.';

CREATE TABLE thumbs.photos (
    id bigint NOT NULL,
    external_id text,
    source_url text NOT NULL,
    profile text NOT NULL,
    job_id bigint NOT NULL,
    render_key text,
    thumbhash text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    spec_version bigint,
    last_source_url text,
    metadata jsonb
);

COMMENT ON TABLE thumbs.photos IS 'A photo''s current thumbnails per profile, apart from the job history: one row per photo (its external id, else its source''s identity) and profile, naming the newest succeeded job. Written with a job''s success, and only by a newer job than the one it names; retention never touches it.';

COMMENT ON COLUMN thumbs.photos.external_id IS 'The backend''s photo id; NULL for a photo known only by its source (source_url).';

COMMENT ON COLUMN thumbs.photos.source_url IS 'The identity of the source the current thumbnails were rendered from (thumbs.source_identity of the job''s URL, as in thumbs.jobs.source_key), not a URL to fetch: a presigned URL appears here without its signature. Without an external id it is, with the profile, what identifies the photo; last_source_url holds the URL as enqueued.';

COMMENT ON COLUMN thumbs.photos.job_id IS 'The job whose thumbnails are current (made, or taken by render key). No foreign key: retention may have pruned that job.';

COMMENT ON COLUMN thumbs.photos.render_key IS 'The render key of the current thumbnails: a job whose original bytes and profile spec give the same key takes these thumbnails instead of rendering.';

COMMENT ON COLUMN thumbs.photos.spec_version IS 'The profile version the current thumbnails were made with, as their job leased it: older than thumbs.profiles.version means stale, for thumbs.rerender.';

COMMENT ON COLUMN thumbs.photos.last_source_url IS 'The URL the current thumbnails were rendered from, as enqueued (a presigned URL with its signature): what thumbs.rerender fetches';

COMMENT ON COLUMN thumbs.photos.metadata IS 'The metadata of the job that made the current thumbnails: what a re-render job carries';

CREATE VIEW thumbs.current_variants AS
 SELECT p.external_id,
    p.source_url,
    p.profile,
    p.job_id,
    v.name,
    v.width,
    v.height,
    v.format,
    v.bytes,
    v.storage_key,
    p.thumbhash,
    p.updated_at
   FROM (thumbs.photos p
     JOIN thumbs.photo_variants v ON ((v.photo_id = p.id)));

COMMENT ON VIEW thumbs.current_variants IS 'The backend''s read path: each photo''s current thumbnails, one row per variant, by external id (or, without one, by source_url, the source''s identity) and profile. Retention never removes them; a newer successful job of the photo replaces them, and a failed one leaves them as they were.';

CREATE TABLE thumbs.erasure_keys (
    erasure_id bigint NOT NULL,
    storage_key text NOT NULL,
    outcome text,
    CONSTRAINT erasure_keys_outcome_check CHECK ((outcome = ANY (ARRAY['deleted'::text, 'kept'::text])))
);

COMMENT ON TABLE thumbs.erasure_keys IS 'The storage keys an erasure waits on, each deleted or kept once collection decides; the forgotten event lists the deleted ones.';

COMMENT ON COLUMN thumbs.erasure_keys.outcome IS 'deleted, or kept (something live named it); NULL until collection decides.';

CREATE TABLE thumbs.erasures (
    id bigint NOT NULL,
    job_id bigint NOT NULL,
    external_id text,
    profile text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE thumbs.erasures IS 'One row per profile of a forgotten photo, until collection has decided every key it named (deleted or kept): then its forgotten event is written and the row goes.';

COMMENT ON COLUMN thumbs.erasures.job_id IS 'The job the forgotten event names: the one thumbs.forget was given, else the profile''s newest. No foreign key: the job may be pruned.';

ALTER TABLE thumbs.erasures ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME thumbs.erasures_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE thumbs.event_log (
    id bigint NOT NULL,
    job_id bigint NOT NULL,
    external_id text,
    kind text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    source_url text,
    profile text NOT NULL,
    error_code text,
    error text,
    thumbhash text,
    variants jsonb,
    attempts integer DEFAULT 0 NOT NULL,
    rerender boolean DEFAULT false NOT NULL,
    storage_keys jsonb,
    warnings jsonb,
    metadata jsonb,
    media jsonb,
    CONSTRAINT event_log_kind_check CHECK ((kind = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text, 'forgotten'::text])))
);

COMMENT ON TABLE thumbs.event_log IS 'Completion events as written: one row per job that ended (succeeded, failed for good, cancelled) and per finished erasure (forgotten), inserted in the same statement as the outcome, so that an event exists exactly when its outcome does. Lean on purpose: thumbs.events builds the JSON payload when it is read. Kept for a retention of its own, apart from the jobs.';

COMMENT ON COLUMN thumbs.event_log.id IS 'From a sequence, so not in commit order: a transaction that took an id may commit after one that took a higher id. Read events in (txid, id) order, through thumbs.events_after.';

COMMENT ON COLUMN thumbs.event_log.job_id IS 'The job, or for a forgotten event the job thumbs.forget named (else the profile''s newest). No foreign key: the job''s row may be pruned while its events are kept.';

COMMENT ON COLUMN thumbs.event_log.txid IS 'The writing transaction''s id: thumbs.events_after hands events out in (txid, id) order and only below the snapshot''s xmin, so that none can commit behind a reader''s cursor.';

COMMENT ON COLUMN thumbs.event_log.source_url IS 'The job''s URL masked by thumbs.redact_url (no password, no presigned secret): the secret never reaches this table. NULL once the job is forgotten, and in a forgotten event.';

COMMENT ON COLUMN thumbs.event_log.variants IS 'A success''s thumbnails, one object each (name, width, height, format, bytes, storage_key, and url when the workers have a public URL base); NULL for other kinds.';

COMMENT ON COLUMN thumbs.event_log.storage_keys IS 'A forgotten event''s deleted keys; keys that another photo still named were kept and are not listed.';

COMMENT ON COLUMN thumbs.event_log.metadata IS 'The job''s metadata. The writer gives it, or the event_log_metadata trigger copies it from the job; emptied when the job is forgotten.';

ALTER TABLE thumbs.event_log ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME thumbs.event_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE VIEW thumbs.events AS
 SELECT e.id,
    e.job_id,
    e.external_id,
    e.kind,
    e.created_at,
    (jsonb_build_object('job_id', e.job_id, 'external_id', e.external_id, 'source_url', e.source_url, 'profile', e.profile, 'state', e.kind, 'error_code', e.error_code, 'error', e.error, 'thumbhash', e.thumbhash, 'variants', COALESCE(e.variants, '[]'::jsonb), 'attempts', e.attempts, 'rerender', e.rerender, 'warnings', COALESCE(e.warnings, '[]'::jsonb), 'metadata', COALESCE(e.metadata, '{}'::jsonb), 'media', e.media) ||
        CASE
            WHEN (e.kind = 'forgotten'::text) THEN jsonb_build_object('storage_keys', COALESCE(e.storage_keys, '[]'::jsonb))
            ELSE '{}'::jsonb
        END) AS payload
   FROM thumbs.event_log e;

COMMENT ON VIEW thumbs.events IS 'Completion events with the JSON payload that a backend and a webhook''s data carry, built when read from thumbs.event_log. Read them in commit order through thumbs.events_after, not by id.';

CREATE TABLE thumbs.jobs (
    id bigint NOT NULL,
    source_url text,
    profile text NOT NULL,
    state text DEFAULT 'queued'::text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    run_at timestamp with time zone DEFAULT now() NOT NULL,
    error_code text,
    last_error text,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    lease_token uuid,
    lease_expires_at timestamp with time zone,
    leased_by text,
    attempt_log jsonb DEFAULT '[]'::jsonb NOT NULL,
    shares_source boolean DEFAULT false NOT NULL,
    thumbhash text,
    render_key text,
    reused_from bigint,
    stage_ms jsonb,
    source_key text,
    external_id text,
    rerender boolean DEFAULT false NOT NULL,
    spec_version bigint,
    warnings jsonb DEFAULT '[]'::jsonb NOT NULL,
    media jsonb,
    owner text,
    turn bigint,
    CONSTRAINT jobs_max_attempts_check CHECK ((max_attempts > 0)),
    CONSTRAINT jobs_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text, 'forgotten'::text])))
)
WITH (fillfactor='80', autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='200', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.02', autovacuum_vacuum_cost_delay='0');

COMMENT ON TABLE thumbs.jobs IS 'The queue and its history: one row per job (a source and a profile), from thumbs.enqueue through its leases and attempts to its final state; retention deletes finished rows. Every row is rewritten several times (lease, heartbeats, outcome), hence the table''s fillfactor and eager autovacuum settings.';

COMMENT ON COLUMN thumbs.jobs.source_url IS 'The URL to fetch, as enqueued: a presigned URL with its signature, or s3://BUCKET/KEY. A queued job takes the newer URL when the same photo or source is enqueued again; NULL once the job is forgotten.';

COMMENT ON COLUMN thumbs.jobs.state IS 'queued (waiting or due), running (leased), or final: succeeded, failed (for good), cancelled, or forgotten (scrubbed by thumbs.forget). An attempt that will be retried sends the job back to queued with a later run_at.';

COMMENT ON COLUMN thumbs.jobs.priority IS 'Higher goes first; owners take turns only among jobs of equal priority. Re-render jobs are queued far below the default, so that uploads go first.';

COMMENT ON COLUMN thumbs.jobs.attempts IS 'Attempts used, counted at lease, so that an original that crashes every worker that takes it still runs out of attempts. A hand-back at a clean stop, a failure caused by the worker''s own configuration and a completion refused by collection give theirs back; thumbs.retry resets it.';

COMMENT ON COLUMN thumbs.jobs.run_at IS 'When the job is due: its enqueue, a scheduled time or the end of a retry''s backoff. A queued job whose run_at is ahead has no turn until it comes.';

COMMENT ON COLUMN thumbs.jobs.error_code IS 'The last failed attempt''s code, from a stable set (the README''s error codes). A queued job waiting out a backoff keeps it; success clears it.';

COMMENT ON COLUMN thumbs.jobs.last_error IS 'The last failed attempt''s message, with any password or presigned secret in a URL masked.';

COMMENT ON COLUMN thumbs.jobs.metadata IS 'The backend''s JSON, stored as given: every event of the job carries it, and a re-render job carries that of the job that made the photo''s thumbnails. Emptied when the job is forgotten.';

COMMENT ON COLUMN thumbs.jobs.started_at IS 'When the present or last attempt was leased (NULL after a hand-back or thumbs.retry). Collection compares it with its fence and with an object''s deletion to tell which completions might have missed them.';

COMMENT ON COLUMN thumbs.jobs.finished_at IS 'When the job reached its final state: what retention and the throughput view go by.';

COMMENT ON COLUMN thumbs.jobs.lease_token IS 'The present lease: a fresh random token at every lease, NULL when the job is not running. Every write a worker makes for the job is fenced on it (and on state running), so a worker whose lease expired and was taken, or whose job was cancelled, writes nothing.';

COMMENT ON COLUMN thumbs.jobs.lease_expires_at IS 'When the lease runs out unless a heartbeat extends it; after that any worker''s rescue requeues the job (or fails it, out of attempts). Heartbeats change only this column, which no index covers, so that they are HOT updates.';

COMMENT ON COLUMN thumbs.jobs.leased_by IS 'The worker (thumbs.workers.id) of the present or last lease; kept after the job ends.';

COMMENT ON COLUMN thumbs.jobs.attempt_log IS 'The attempts that ended without success, oldest first, bounded by thumbs.append_attempt: one object each with attempt, worker, started_at, ended_at, outcome (retry, failed, lease_expired, handed_back or deferred), error_code and error. On the row rather than in a table of its own, so a job costs no extra insert; thumbs.job_attempts shows it as rows.';

COMMENT ON COLUMN thumbs.jobs.shares_source IS 'Set by thumbs.enqueue on the queued jobs of a source that more than one live job names (the same photo under several profiles). The lease looks for a picked job''s siblings only when it is set, so they come along and the original is downloaded once; never cleared, and never set on jobs inserted without thumbs.enqueue.';

COMMENT ON COLUMN thumbs.jobs.thumbhash IS 'ThumbHash of the original (base64), set when the job succeeds: a placeholder image for apps';

COMMENT ON COLUMN thumbs.jobs.render_key IS 'SHA-256 of (original bytes'' SHA-256, profile spec, storage, renderer version), set when the job succeeds';

COMMENT ON COLUMN thumbs.jobs.reused_from IS 'The succeeded job whose variants this job took (same render key): nothing was decoded for it';

COMMENT ON COLUMN thumbs.jobs.stage_ms IS 'Milliseconds per stage of the attempt that succeeded (fetch, decode, resize, encode, store), set when the job succeeds';

COMMENT ON COLUMN thumbs.jobs.source_key IS 'The source''s identity, thumbs.source_identity(source_url): what unique enqueue, shared downloads and forgetting compare, so that two signings of one presigned URL are one source. Kept by the jobs_source_key trigger on insert and whenever source_url changes rather than generated: PostgreSQL would compute a generated column again at every lease, heartbeat and outcome.';

COMMENT ON COLUMN thumbs.jobs.external_id IS 'The backend''s own id for the photo (thumbs.enqueue''s external_id). With one, it and the profile decide what a job stands for, whatever its URL; without one, the source''s identity does.';

COMMENT ON COLUMN thumbs.jobs.rerender IS 'Queued by thumbs.rerender: the photo had thumbnails made with an older spec of its profile';

COMMENT ON COLUMN thumbs.jobs.spec_version IS 'Re-render jobs: the version of the profile they were queued for';

COMMENT ON COLUMN thumbs.jobs.warnings IS 'What a succeeded job has to say about its original, as a list of {"code", "message"} objects (such as truncated_image); empty when there is nothing to say.';

COMMENT ON COLUMN thumbs.jobs.media IS 'What the original was beyond a plain photo: a video''s {"kind": "video", "duration_seconds", "width", "height", "codec", "container", "bit_depth", "dynamic_range", "live_photo_id"}, a still''s {"kind": "image", "motion", "live_photo_id"}; NULL for a plain photo.';

COMMENT ON COLUMN thumbs.jobs.owner IS 'The user or tenant the job is for (thumbs.enqueue''s owner): among due jobs of equal priority, owners are served in turn; NULL: one owner of its own';

COMMENT ON COLUMN thumbs.jobs.turn IS 'A queued, due job''s place in its priority''s line (the lease takes the lowest first): 2 * round for an owner new to the line, 2 * round + 1 for an owner already in it; NULL while it waits for its run_at. Kept by the jobs_take_turn triggers';

CREATE VIEW thumbs.failed_jobs AS
 SELECT jobs.id,
    jobs.source_url,
    jobs.profile,
    jobs.error_code,
    jobs.last_error,
    jobs.attempts,
    jobs.max_attempts,
    jobs.created_at,
    jobs.finished_at
   FROM thumbs.jobs
  WHERE (jobs.state = 'failed'::text)
  ORDER BY jobs.finished_at DESC;

COMMENT ON VIEW thumbs.failed_jobs IS 'Jobs that failed for good, newest first, with their error; cancelled jobs are not in it.';

CREATE TABLE thumbs.gc_objects (
    storage_key text NOT NULL,
    state text,
    reason text,
    queued_at timestamp with time zone DEFAULT now() NOT NULL,
    fenced_at timestamp with time zone,
    claimed_by text,
    claim_expires_at timestamp with time zone,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    deleted_at timestamp with time zone,
    CONSTRAINT gc_objects_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'deleting'::text])))
);

COMMENT ON TABLE thumbs.gc_objects IS 'Collection of storage objects, a two-phase delete: candidates waiting out the grace (pending), objects marked for deletion (deleting) and fenced against completions that might still name them, and each key''s last deletion, kept while a job leased before it could still complete. Objects are content-addressed and shared, so one goes only once no current thumbnail names it.';

COMMENT ON COLUMN thumbs.gc_objects.state IS 'pending: a candidate waiting out the grace; deleting: marked, and a completion that names it is refused; NULL: not a candidate (kept, or deleted: see deleted_at). Rows in neither state are pruned once no fence needs them.';

COMMENT ON COLUMN thumbs.gc_objects.reason IS 'Why it became a candidate: forgotten, pruned, superseded (a current thumbnail replaced or dropped), unclaimed (uploaded by an attempt whose success was not recorded) or orphan (found in storage, named by nothing).';

COMMENT ON COLUMN thumbs.gc_objects.queued_at IS 'When it became a candidate: the grace counts from here (an orphan''s is set back by the grace, so it is due at once).';

COMMENT ON COLUMN thumbs.gc_objects.fenced_at IS 'Stamped in a later transaction than the mark: every job leased after it sees the mark when it completes, and deletion waits until every running job was leased after it.';

COMMENT ON COLUMN thumbs.gc_objects.claim_expires_at IS 'The end of the present claim (claimed_by''s), after which another collector may take the object over; after a failed delete, when it may be tried again.';

COMMENT ON COLUMN thumbs.gc_objects.deleted_at IS 'The last deletion from storage. A completion of a job leased before it is refused too: its check that the object existed may have come just before the delete.';

CREATE VIEW thumbs.gc_overview AS
 SELECT count(*) FILTER (WHERE (g.state = 'pending'::text)) AS pending,
    count(*) FILTER (WHERE (g.state = 'deleting'::text)) AS deleting,
    count(*) FILTER (WHERE ((g.state = 'deleting'::text) AND (g.last_error IS NOT NULL))) AS failing,
    min(g.queued_at) FILTER (WHERE (g.state IS NOT NULL)) AS oldest,
    ( SELECT count(*) AS count
           FROM thumbs.erasures) AS erasures_open
   FROM thumbs.gc_objects g
  WHERE (g.state IS NOT NULL);

COMMENT ON VIEW thumbs.gc_overview IS 'What collection has to do: candidates pending, objects being deleted (and those whose delete failed), the oldest of them, and the erasures whose forgotten event is not written yet.';

CREATE VIEW thumbs.job_attempts AS
 SELECT j.id AS job_id,
    j.source_url,
    a.attempt,
    a.worker,
    a.started_at,
    a.ended_at,
    a.outcome,
    a.error_code,
    a.error
   FROM thumbs.jobs j,
    LATERAL jsonb_to_recordset(j.attempt_log) a(attempt integer, worker text, started_at timestamp with time zone, ended_at timestamp with time zone, outcome text, error_code text, error text)
  ORDER BY j.id, a.ended_at;

COMMENT ON VIEW thumbs.job_attempts IS 'The jobs'' attempt logs as rows: one per attempt that ended without success. The attempt that succeeded is the job row itself (leased_by, started_at, finished_at).';

ALTER TABLE thumbs.jobs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME thumbs.jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE VIEW thumbs.live_photos AS
 SELECT s.owner,
    s.live_photo_id,
    s.id AS still_job_id,
    s.external_id AS still_external_id,
    v.id AS video_job_id,
    v.external_id AS video_external_id,
    GREATEST(s.finished_at, v.finished_at) AS paired_at
   FROM (( SELECT DISTINCT ON (jobs.owner, (jobs.media ->> 'live_photo_id'::text)) jobs.owner,
            (jobs.media ->> 'live_photo_id'::text) AS live_photo_id,
            jobs.id,
            jobs.external_id,
            jobs.finished_at
           FROM thumbs.jobs
          WHERE ((jobs.state = 'succeeded'::text) AND (jobs.media ? 'live_photo_id'::text) AND ((jobs.media ->> 'kind'::text) = 'image'::text))
          ORDER BY jobs.owner, (jobs.media ->> 'live_photo_id'::text), jobs.id DESC) s
     CROSS JOIN LATERAL ( SELECT j.id,
            j.external_id,
            j.finished_at
           FROM thumbs.jobs j
          WHERE ((j.state = 'succeeded'::text) AND (j.media ? 'live_photo_id'::text) AND ((j.media ->> 'kind'::text) = 'video'::text) AND ((j.media ->> 'live_photo_id'::text) = s.live_photo_id) AND (NOT (j.owner IS DISTINCT FROM s.owner)))
          ORDER BY j.id DESC
         LIMIT 1) v);

COMMENT ON VIEW thumbs.live_photos IS 'Live Photos paired: per owner and identifier, the newest succeeded job of the still and of its video.';

COMMENT ON COLUMN thumbs.live_photos.owner IS 'The jobs'' owner (NULL: jobs enqueued without one).';

COMMENT ON COLUMN thumbs.live_photos.live_photo_id IS 'The identifier both halves carry: the still''s Apple maker note, the MOV''s content identifier.';

COMMENT ON COLUMN thumbs.live_photos.still_job_id IS 'The newest succeeded job of the still (a HEIC or JPEG).';

COMMENT ON COLUMN thumbs.live_photos.still_external_id IS 'That job''s external id.';

COMMENT ON COLUMN thumbs.live_photos.video_job_id IS 'The newest succeeded job of the video (the MOV).';

COMMENT ON COLUMN thumbs.live_photos.video_external_id IS 'That job''s external id.';

COMMENT ON COLUMN thumbs.live_photos.paired_at IS 'When the later of the two finished.';

CREATE TABLE thumbs.originals (
    url text NOT NULL,
    bytes bigint NOT NULL,
    sha256 text,
    content_type text,
    etag text,
    last_modified text,
    format text,
    width integer,
    height integer,
    first_fetched_at timestamp with time zone DEFAULT now() NOT NULL,
    fetched_at timestamp with time zone DEFAULT now() NOT NULL,
    checked_at timestamp with time zone DEFAULT now() NOT NULL,
    downloads bigint DEFAULT 1 NOT NULL,
    revalidations bigint DEFAULT 0 NOT NULL,
    fetched_by text,
    bytes_read bigint,
    index_sha256 text
);

COMMENT ON TABLE thumbs.originals IS 'What the origin served for each source, as of the last time a worker asked: one row per source identity, written once per download or revalidation rather than once per job. For operators (sizes, duplicates, changed originals) and for the validators (ETag, Last-Modified) that a worker''s conditional request sends.';

COMMENT ON COLUMN thumbs.originals.url IS 'The source''s identity as thumbd compares it (thumbs.source_identity), with a URL''s password masked: never a presigned signature, so a source re-signed many times has one row.';

COMMENT ON COLUMN thumbs.originals.bytes IS 'The original''s size in bytes: the whole file''s, also when only parts of it were read (bytes_read).';

COMMENT ON COLUMN thumbs.originals.sha256 IS 'SHA-256 of the original''s bytes (hex): the same bytes under two URLs have the same value, and render keys are built from it. NULL for an original read by ranges, of which no worker read every byte (index_sha256 stands in).';

COMMENT ON COLUMN thumbs.originals.format IS 'The format read from the file''s header; NULL, like width and height, when thumbd cannot size the format without decoding it.';

COMMENT ON COLUMN thumbs.originals.width IS 'Pixel width stored in the file, before EXIF orientation is applied.';

COMMENT ON COLUMN thumbs.originals.height IS 'Pixel height stored in the file, before EXIF orientation is applied.';

COMMENT ON COLUMN thumbs.originals.fetched_at IS 'The last full download.';

COMMENT ON COLUMN thumbs.originals.checked_at IS 'The last time the origin confirmed the copy, by a download or a 304: what thumbs.prune_originals goes by.';

COMMENT ON COLUMN thumbs.originals.downloads IS 'Full downloads of the source by any worker: one for several profiles enqueued together.';

COMMENT ON COLUMN thumbs.originals.revalidations IS 'Conditional requests the origin answered with 304 Not Modified: a cached copy confirmed without downloading it again.';

COMMENT ON COLUMN thumbs.originals.bytes_read IS 'For an original read by ranges (an MP4 or QuickTime video from an origin that answers ranges): the bytes read of it, its head, its index and the keyframes its poster may come from; NULL when it was read whole.';

COMMENT ON COLUMN thumbs.originals.index_sha256 IS 'For an original read by ranges: SHA-256 (hex) of its container index (the moov box), which with its size identifies the video where identical originals are matched; NULL when it was read whole.';

CREATE VIEW thumbs.owner_overview AS
 SELECT j.owner,
    count(*) FILTER (WHERE (j.state = 'queued'::text)) AS queued,
    count(*) FILTER (WHERE ((j.state = 'queued'::text) AND (j.turn IS NOT NULL))) AS due,
    count(*) FILTER (WHERE (j.state = 'running'::text)) AS running,
    (now() - min(j.created_at) FILTER (WHERE (j.state = 'queued'::text))) AS oldest_queued_age
   FROM thumbs.jobs j
  WHERE (j.state = ANY (ARRAY['queued'::text, 'running'::text]))
  GROUP BY j.owner
  ORDER BY (count(*) FILTER (WHERE (j.state = 'queued'::text))) DESC, (count(*) FILTER (WHERE (j.state = 'running'::text))) DESC, j.owner NULLS FIRST;

COMMENT ON VIEW thumbs.owner_overview IS 'Owners with live jobs, the largest backlog first: who is holding the queue. The NULL owner is the jobs without one, served together as one owner. It counts every live job: on a large queue, ask it now and then.';

ALTER TABLE thumbs.photos ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME thumbs.photos_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE thumbs.profiles (
    name text NOT NULL,
    spec jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    version bigint DEFAULT 1 NOT NULL
);

COMMENT ON TABLE thumbs.profiles IS 'Named thumbnail specs: the variants a job of the profile makes, and the profile''s poster and animation settings. A spec is checked when it is written and versioned whenever it changes; workers read it at every lease, so a change applies to jobs leased afterwards.';

COMMENT ON COLUMN thumbs.profiles.spec IS '{"variants": [...]} with optional "poster" and "animation" settings. The profiles_checked trigger refuses a spec with problems (thumbs.check_profile), in the worker''s own words.';

COMMENT ON COLUMN thumbs.profiles.version IS 'Raised by the profiles_version trigger whenever the spec changes (updated_at with it). Leases send it with the spec, and thumbnails made with an older version are stale (thumbs.rerender).';

CREATE VIEW thumbs.queue_overview AS
 SELECT s.state,
    count(j.id) AS jobs,
    (now() - min(j.created_at)) AS oldest_age
   FROM (unnest(ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text, 'forgotten'::text]) WITH ORDINALITY s(state, ord)
     LEFT JOIN thumbs.jobs j ON ((j.state = s.state)))
  GROUP BY s.state, s.ord
  ORDER BY s.ord;

COMMENT ON VIEW thumbs.queue_overview IS 'One row per job state, empty states included, with the age of its oldest job counted from when it was enqueued (not how long it has waited or run).';

CREATE TABLE thumbs.queue_sample (
    one boolean DEFAULT true NOT NULL,
    taken_at timestamp with time zone NOT NULL,
    queued bigint NOT NULL,
    ready bigint NOT NULL,
    running bigint NOT NULL,
    oldest_ready_seconds double precision NOT NULL,
    gc_backlog bigint NOT NULL,
    CONSTRAINT queue_sample_one_check CHECK (one)
);

COMMENT ON TABLE thumbs.queue_sample IS 'One row: the fleet''s shared count of the live queue, for the workers'' gauges and readiness. A worker whose sample is older than its interval counts again (one at a time, SKIP LOCKED) and the others read this row, so the cost of counting does not grow with the number of workers.';

COMMENT ON COLUMN thumbs.queue_sample.one IS 'Always true, the primary key: it keeps the table at one row.';

COMMENT ON COLUMN thumbs.queue_sample.ready IS 'Queued jobs that were due (run_at passed) when the sample was taken.';

COMMENT ON COLUMN thumbs.queue_sample.oldest_ready_seconds IS 'How long the oldest due job had waited when the sample was taken; a reader adds the sample''s age while any job is due.';

COMMENT ON COLUMN thumbs.queue_sample.gc_backlog IS 'Storage objects collection still has to decide on or delete (pending or deleting).';

CREATE VIEW thumbs.rerender_overview AS
 SELECT p.name AS profile,
    ( SELECT count(*) AS count
           FROM thumbs.photos ph
          WHERE (ph.profile = p.name)) AS photos,
    ( SELECT count(*) AS count
           FROM thumbs.photos ph
          WHERE ((ph.profile = p.name) AND (ph.spec_version IS DISTINCT FROM p.version))) AS stale,
    ( SELECT count(*) AS count
           FROM thumbs.jobs j
          WHERE (j.rerender AND (j.profile = p.name) AND (j.state = 'queued'::text))) AS queued,
    ( SELECT count(*) AS count
           FROM thumbs.jobs j
          WHERE (j.rerender AND (j.profile = p.name) AND (j.state = 'running'::text))) AS running,
    ( SELECT count(*) AS count
           FROM thumbs.jobs j
          WHERE (j.rerender AND (j.profile = p.name) AND (j.state = 'succeeded'::text))) AS succeeded,
    ( SELECT count(*) AS count
           FROM thumbs.photos ph
          WHERE ((ph.profile = p.name) AND (ph.spec_version IS DISTINCT FROM p.version) AND (EXISTS ( SELECT 1
                   FROM thumbs.jobs j
                  WHERE (j.rerender AND (j.state = 'failed'::text) AND (j.spec_version = p.version) AND (j.profile = p.name) AND (((ph.external_id IS NOT NULL) AND (j.external_id = ph.external_id)) OR ((ph.external_id IS NULL) AND (j.external_id IS NULL) AND (j.source_key = ph.source_url)))))))) AS failed
   FROM thumbs.profiles p
  ORDER BY p.name;

COMMENT ON VIEW thumbs.rerender_overview IS 'Per profile: its photos, how many have thumbnails of an older spec (stale), and its re-render jobs queued, running and succeeded; failed counts the stale photos whose re-render failed for good under the present spec.';

CREATE TABLE thumbs.schema_migrations (
    version text NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE thumbs.schema_migrations IS 'One row per migrations/NNNN_name.sql applied, written in the migration''s own transaction. Created by thumbd migrate itself before the first migration; a worker waits, not ready, until the newest version here is one its statements can run on.';

CREATE TABLE thumbs.workers (
    id text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    concurrency integer NOT NULL,
    memory_budget bigint NOT NULL,
    lease_ttl interval NOT NULL,
    state text DEFAULT 'running'::text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    last_heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    jobs_succeeded bigint DEFAULT 0 NOT NULL,
    jobs_failed bigint DEFAULT 0 NOT NULL,
    jobs_retried bigint DEFAULT 0 NOT NULL,
    leases_lost bigint DEFAULT 0 NOT NULL,
    source_schemes text[] DEFAULT '{http,https}'::text[] NOT NULL,
    fences_collection boolean DEFAULT false NOT NULL,
    CONSTRAINT workers_state_check CHECK ((state = ANY (ARRAY['running'::text, 'stopping'::text])))
);

COMMENT ON TABLE thumbs.workers IS 'The worker registry: one row per worker process, written at start, refreshed every housekeeping round (an upsert, so a worker that was frozen comes back) and deleted at a clean exit; thumbs.expire_workers removes the rows of workers that vanished. The s3:// lease guard and collection read what each worker can do from it.';

COMMENT ON COLUMN thumbs.workers.id IS 'host:pid:random, as the worker''s log and thumbs.jobs.leased_by name it.';

COMMENT ON COLUMN thumbs.workers.memory_budget IS 'Bytes of the worker''s memory budget, which its decodes and downloads are admitted against.';

COMMENT ON COLUMN thumbs.workers.lease_ttl IS 'The worker''s lease TTL: it heartbeats every third of it, counts as stale after one without a heartbeat, and its row expires after three (at least a minute).';

COMMENT ON COLUMN thumbs.workers.state IS 'running, or stopping: a stop was requested and the worker is finishing its jobs (or handing them back) before it deletes its row.';

COMMENT ON COLUMN thumbs.workers.jobs_succeeded IS 'Counted since the process started and refreshed every housekeeping round, like jobs_failed, jobs_retried and leases_lost.';

COMMENT ON COLUMN thumbs.workers.jobs_retried IS 'Attempts that ended in a backoff, since the process started.';

COMMENT ON COLUMN thumbs.workers.leases_lost IS 'Jobs whose lease the worker lost (expired and taken by a rescue, or cancelled), since the process started: a count that keeps rising means the worker stalls for longer than its lease TTL.';

COMMENT ON COLUMN thumbs.workers.source_schemes IS 'The schemes of source URLs the worker reads. A worker of a release that does not say registers the default, http and https, and the lease_only_readable_sources trigger keeps s3:// jobs from it during a rolling upgrade.';

COMMENT ON COLUMN thumbs.workers.fences_collection IS 'True for a worker whose completion statement refuses to record a job that names an object being deleted. Collection deletes nothing while a row says false: a worker of an older release, which would record it.';

CREATE VIEW thumbs.stuck_jobs AS
 SELECT j.id,
    j.source_url,
    j.profile,
    j.attempts,
    j.leased_by,
    j.started_at,
    j.lease_expires_at,
    (now() - j.lease_expires_at) AS overdue,
    (EXISTS ( SELECT 1
           FROM thumbs.workers w
          WHERE (w.id = j.leased_by))) AS worker_registered
   FROM thumbs.jobs j
  WHERE ((j.state = 'running'::text) AND (j.lease_expires_at < now()))
  ORDER BY j.lease_expires_at;

COMMENT ON VIEW thumbs.stuck_jobs IS 'Running jobs whose lease has expired: their worker died or froze. Every running worker''s rescue returns them to the queue; rows that stay here for longer than a lease TTL mean no worker is running.';

CREATE VIEW thumbs.throughput AS
 WITH minutes AS (
         SELECT generate_series((date_trunc('minute'::text, now()) - '00:59:00'::interval), date_trunc('minute'::text, now()), '00:01:00'::interval) AS minute
        ), finished AS (
         SELECT date_trunc('minute'::text, jobs.finished_at) AS minute,
            jobs.state,
            (jobs.finished_at - jobs.started_at) AS took
           FROM thumbs.jobs
          WHERE ((jobs.state = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])) AND (jobs.finished_at >= (date_trunc('minute'::text, now()) - '00:59:00'::interval)))
        )
 SELECT m.minute,
    count(*) FILTER (WHERE (f.state = 'succeeded'::text)) AS succeeded,
    count(*) FILTER (WHERE (f.state = 'failed'::text)) AS failed,
    count(*) FILTER (WHERE (f.state = 'cancelled'::text)) AS cancelled,
    percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM f.took))::double precision)) FILTER (WHERE (f.state = 'succeeded'::text)) AS median_seconds
   FROM (minutes m
     LEFT JOIN finished f ON ((f.minute = m.minute)))
  GROUP BY m.minute
  ORDER BY m.minute;

COMMENT ON VIEW thumbs.throughput IS 'Jobs finished per minute over the last hour, empty minutes included, with the median run time of the successes (their last attempt only). Each job counts once, by its present state and finish time, and only while retention keeps it.';

CREATE TABLE thumbs.variants (
    job_id bigint NOT NULL,
    name text NOT NULL,
    width integer NOT NULL,
    height integer NOT NULL,
    format text NOT NULL,
    bytes bigint NOT NULL,
    storage_key text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE thumbs.variants IS 'The job history''s thumbnails: one row per variant a succeeded job made (or took by render key), deleted with its job by retention. These rows do not keep objects from collection: one whose storage_key no current thumbnail names may point to an object that has been deleted, so read thumbs.current_variants for what exists.';

COMMENT ON COLUMN thumbs.variants.storage_key IS 'The object''s key under the storage root: a hash of the thumbnail''s content, so identical outputs share one object.';

CREATE TABLE thumbs.webhook_deliveries (
    id bigint NOT NULL,
    endpoint text NOT NULL,
    event_id bigint NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    first_attempt_at timestamp with time zone,
    lease_token uuid,
    last_status integer,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    delivered_at timestamp with time zone,
    CONSTRAINT webhook_deliveries_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'delivered'::text, 'given_up'::text, 'stopped'::text])))
);

COMMENT ON TABLE thumbs.webhook_deliveries IS 'One row per endpoint and event to deliver. Any worker claims due rows with SKIP LOCKED, and a claim pushes next_attempt_at a lease ahead, so a delivery whose worker died mid-POST becomes due again: at least once, never lost. Rows go with their event when event retention deletes it.';

COMMENT ON COLUMN thumbs.webhook_deliveries.state IS 'pending (due at next_attempt_at), delivered (a 2xx answer), given_up (failed for long enough), or stopped (the endpoint answered 410 Gone).';

COMMENT ON COLUMN thumbs.webhook_deliveries.next_attempt_at IS 'When the delivery is due. A claim pushes it a lease ahead, so a delivery whose worker died is due again once that passes.';

COMMENT ON COLUMN thumbs.webhook_deliveries.first_attempt_at IS 'The first try: how long retries go on is counted from it.';

COMMENT ON COLUMN thumbs.webhook_deliveries.lease_token IS 'The claim of the attempt in flight: only its holder may write the attempt''s answer.';

COMMENT ON COLUMN thumbs.webhook_deliveries.last_status IS 'The HTTP status of the last answer; NULL when none came.';

ALTER TABLE thumbs.webhook_deliveries ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME thumbs.webhook_deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE thumbs.webhook_endpoints (
    url text NOT NULL,
    registered_at timestamp with time zone DEFAULT now() NOT NULL,
    cursor text,
    disabled_at timestamp with time zone,
    disabled_reason text
);

COMMENT ON TABLE thumbs.webhook_endpoints IS 'The webhook URLs the workers deliver events to, each with a cursor over the events in commit order. A worker that holds an endpoint''s row lock moves its cursor and queues one delivery per event; an endpoint that answered 410 Gone is off until thumbs.enable_webhook.';

COMMENT ON COLUMN thumbs.webhook_endpoints.cursor IS 'The last event (txid/id, as thumbs.events_after''s cursor) whose delivery was queued; events after it are queued next. A new endpoint starts at the newest event: what happened before it existed is sent only by thumbs.replay_webhooks.';

COMMENT ON COLUMN thumbs.webhook_endpoints.disabled_at IS 'Set when the endpoint answered 410 Gone: nothing is sent to it (its cursor still moves, queueing nothing) until thumbs.enable_webhook.';

CREATE VIEW thumbs.webhook_overview AS
 SELECT w.url,
    w.registered_at,
    w.disabled_at,
    w.disabled_reason,
    count(*) FILTER (WHERE (d.state = 'pending'::text)) AS pending,
    count(*) FILTER (WHERE ((d.state = 'pending'::text) AND (d.next_attempt_at <= now()))) AS due,
    count(*) FILTER (WHERE ((d.state = 'pending'::text) AND (d.attempts > 0))) AS retrying,
    count(*) FILTER (WHERE (d.state = 'delivered'::text)) AS delivered,
    count(*) FILTER (WHERE (d.state = 'given_up'::text)) AS given_up,
    count(*) FILTER (WHERE (d.state = 'stopped'::text)) AS stopped,
    min(d.created_at) FILTER (WHERE (d.state = 'pending'::text)) AS oldest_pending
   FROM (thumbs.webhook_endpoints w
     LEFT JOIN thumbs.webhook_deliveries d ON ((d.endpoint = w.url)))
  GROUP BY w.url, w.registered_at, w.disabled_at, w.disabled_reason;

COMMENT ON VIEW thumbs.webhook_overview IS 'Per webhook endpoint: whether it is off (and why), and its deliveries by state: pending, due, retrying, delivered, given up, stopped.';

CREATE VIEW thumbs.worker_overview AS
 SELECT w.id,
    w.host,
    w.pid,
    w.state,
    w.version,
    w.concurrency,
    w.memory_budget,
    ( SELECT count(*) AS count
           FROM thumbs.jobs j
          WHERE ((j.state = 'running'::text) AND (j.leased_by = w.id))) AS running,
    w.jobs_succeeded,
    w.jobs_failed,
    w.jobs_retried,
    w.leases_lost,
    w.started_at,
    (now() - w.last_heartbeat_at) AS heartbeat_age,
    (w.last_heartbeat_at < (now() - w.lease_ttl)) AS stale
   FROM thumbs.workers w
  ORDER BY w.started_at;

COMMENT ON VIEW thumbs.worker_overview IS 'The registered workers: how many jobs each holds now and its counters since it started. stale: no heartbeat for a whole lease TTL, so the worker is dead or frozen.';

ALTER TABLE ONLY thumbs.erasure_keys
    ADD CONSTRAINT erasure_keys_pkey PRIMARY KEY (erasure_id, storage_key);

ALTER TABLE ONLY thumbs.erasures
    ADD CONSTRAINT erasures_pkey PRIMARY KEY (id);

ALTER TABLE ONLY thumbs.event_log
    ADD CONSTRAINT event_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY thumbs.gc_objects
    ADD CONSTRAINT gc_objects_pkey PRIMARY KEY (storage_key);

ALTER TABLE ONLY thumbs.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY thumbs.originals
    ADD CONSTRAINT originals_pkey PRIMARY KEY (url);

ALTER TABLE ONLY thumbs.photo_variants
    ADD CONSTRAINT photo_variants_pkey PRIMARY KEY (photo_id, name);

ALTER TABLE ONLY thumbs.photos
    ADD CONSTRAINT photos_pkey PRIMARY KEY (id);

ALTER TABLE ONLY thumbs.profiles
    ADD CONSTRAINT profiles_pkey PRIMARY KEY (name);

ALTER TABLE ONLY thumbs.queue_sample
    ADD CONSTRAINT queue_sample_pkey PRIMARY KEY (one);

ALTER TABLE ONLY thumbs.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

ALTER TABLE ONLY thumbs.variants
    ADD CONSTRAINT variants_pkey PRIMARY KEY (job_id, name);

ALTER TABLE ONLY thumbs.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_endpoint_event_id_key UNIQUE (endpoint, event_id);

ALTER TABLE ONLY thumbs.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);

ALTER TABLE ONLY thumbs.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (url);

ALTER TABLE ONLY thumbs.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (id);

CREATE INDEX erasure_keys_undecided_idx ON thumbs.erasure_keys USING btree (storage_key) WHERE (outcome IS NULL);

COMMENT ON INDEX thumbs.erasure_keys_undecided_idx IS 'Undecided keys by storage key: when collection deletes or keeps an object, the erasures waiting on it are found here.';

CREATE INDEX event_log_commit_order_idx ON thumbs.event_log USING btree (txid, id);

COMMENT ON INDEX thumbs.event_log_commit_order_idx IS 'Events in commit order, (txid, id): what thumbs.events_after, webhook dispatch and a new endpoint''s starting cursor read.';

CREATE INDEX event_log_job_idx ON thumbs.event_log USING btree (job_id);

COMMENT ON INDEX thumbs.event_log_job_idx IS 'A job''s events, found when the job is forgotten to scrub them.';

CREATE INDEX gc_objects_backlog_idx ON thumbs.gc_objects USING btree (state, queued_at) WHERE (state IS NOT NULL);

COMMENT ON INDEX thumbs.gc_objects_backlog_idx IS 'Candidates and marked objects by state and age, for collection''s passes and the backlog counts; partial, so the rows kept only for the completion fence cost nothing.';

CREATE INDEX gc_objects_idle_idx ON thumbs.gc_objects USING btree (deleted_at) WHERE (state IS NULL);

COMMENT ON INDEX thumbs.gc_objects_idle_idx IS 'Rows that are no longer candidates, by deletion time: pruned once no job leased before their deletion is still running.';

CREATE INDEX jobs_deferred_idx ON thumbs.jobs USING btree (run_at) WHERE ((state = 'queued'::text) AND (turn IS NULL));

COMMENT ON INDEX thumbs.jobs_deferred_idx IS 'Queued jobs waiting for their run_at, which have no turn yet: the workers give the due ones their turn from it, the longest due first.';

CREATE INDEX jobs_error_idx ON thumbs.jobs USING btree (error_code, id) WHERE (error_code IS NOT NULL);

COMMENT ON INDEX thumbs.jobs_error_idx IS 'The console''s jobs by error code, newest first, and thumbs.retry of every failed job of one code.';

CREATE INDEX jobs_external_idx ON thumbs.jobs USING btree (external_id, profile, id) WHERE (external_id IS NOT NULL);

COMMENT ON INDEX thumbs.jobs_external_idx IS 'A photo''s jobs by the backend''s id: for forgetting, re-rendering and a backend''s own lookups.';

CREATE INDEX jobs_finished_idx ON thumbs.jobs USING btree (finished_at, id) WHERE (state = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text, 'forgotten'::text]));

COMMENT ON INDEX thumbs.jobs_finished_idx IS 'Ended jobs by finish time, for retention and the throughput view. id makes each key unique, since a batch of outcomes ends at one now().';

CREATE INDEX jobs_live_photo_idx ON thumbs.jobs USING btree (owner, ((media ->> 'live_photo_id'::text)), id DESC) WHERE ((state = 'succeeded'::text) AND (media ? 'live_photo_id'::text) AND ((media ->> 'kind'::text) = 'image'::text));

COMMENT ON INDEX thumbs.jobs_live_photo_idx IS 'thumbs.live_photos: an owner''s succeeded Live Photo stills, by identifier, newest first.';

CREATE UNIQUE INDEX jobs_live_source_anonymous_idx ON thumbs.jobs USING btree (source_key, profile) WHERE ((state = ANY (ARRAY['queued'::text, 'running'::text])) AND (external_id IS NULL));

COMMENT ON INDEX thumbs.jobs_live_source_anonymous_idx IS 'At most one live job per source identity and profile among the jobs without an external id: what makes thumbs.enqueue race-free for them.';

CREATE INDEX jobs_live_video_idx ON thumbs.jobs USING btree (((media ->> 'live_photo_id'::text)), id DESC) WHERE ((state = 'succeeded'::text) AND (media ? 'live_photo_id'::text) AND ((media ->> 'kind'::text) = 'video'::text));

COMMENT ON INDEX thumbs.jobs_live_video_idx IS 'thumbs.live_photos: the succeeded Live Photo videos of an identifier, newest first.';

CREATE INDEX jobs_owner_idx ON thumbs.jobs USING btree (owner, id) WHERE (owner IS NOT NULL);

COMMENT ON INDEX thumbs.jobs_owner_idx IS 'The console''s jobs of one owner, newest first (an owner may have few jobs among millions).';

CREATE INDEX jobs_owner_turn_idx ON thumbs.jobs USING btree (COALESCE(owner, ''::text), priority, turn) WHERE ((state = 'queued'::text) AND (turn IS NOT NULL));

COMMENT ON INDEX thumbs.jobs_owner_turn_idx IS 'An owner''s last place in a priority''s line, for the jobs_take_turn triggers. Jobs without an owner are keyed '''' (which thumbs.enqueue refuses as an owner): keyed on owner IS NULL, the index''s order would not serve the lookup, which would then read all of their line.';

CREATE UNIQUE INDEX jobs_queued_external_idx ON thumbs.jobs USING btree (external_id, profile) WHERE ((state = 'queued'::text) AND (external_id IS NOT NULL));

COMMENT ON INDEX thumbs.jobs_queued_external_idx IS 'At most one queued job per external id and profile: what makes thumbs.enqueue race-free for photos with the backend''s id. Running jobs are left out, so that a new original can be queued behind a running job of the photo.';

CREATE INDEX jobs_ready_idx ON thumbs.jobs USING btree (priority DESC, run_at, id) WHERE (state = 'queued'::text);

COMMENT ON INDEX thumbs.jobs_ready_idx IS 'Every queued job in (priority DESC, run_at, id) order: the lease''s order before owners took turns (migration 0019). The queue depth count scans it for queued, due and the oldest run_at; partial, so finished jobs cost it nothing.';

CREATE INDEX jobs_render_key_idx ON thumbs.jobs USING btree (render_key, id DESC) WHERE ((state = 'succeeded'::text) AND (render_key IS NOT NULL));

COMMENT ON INDEX thumbs.jobs_render_key_idx IS 'Succeeded jobs by render key, newest first. Render reuse looked them up here until migration 0009; since then it reads thumbs.photos (photos_render_key_idx) instead, and this index serves only lookups by hand.';

CREATE INDEX jobs_rerender_idx ON thumbs.jobs USING btree (profile, state) WHERE rerender;

COMMENT ON INDEX thumbs.jobs_rerender_idx IS 'Re-render jobs per profile and state, for thumbs.rerender_overview; partial, so ordinary jobs are not in it.';

CREATE INDEX jobs_running_idx ON thumbs.jobs USING btree (id) WHERE (state = 'running'::text);

COMMENT ON INDEX thumbs.jobs_running_idx IS 'Running jobs, for the rescue of expired leases, the workers view and collection''s fence. Keyed on id, unique and growing, rather than on lease_expires_at or leased_by, which repeat across a leased batch and slowed the queue; and heartbeats, which change only lease_expires_at, stay HOT.';

CREATE INDEX jobs_source_key_idx ON thumbs.jobs USING btree (source_key text_pattern_ops);

COMMENT ON INDEX thumbs.jobs_source_key_idx IS 'A source''s jobs (forgetting, the lease''s siblings, re-renders) and the console''s search by a prefix of the source (text_pattern_ops: LIKE ''prefix%'' in any collation).';

CREATE INDEX jobs_turn_idx ON thumbs.jobs USING btree (priority DESC, turn, id) WHERE ((state = 'queued'::text) AND (turn IS NOT NULL));

COMMENT ON INDEX thumbs.jobs_turn_idx IS 'The lease''s line: due queued jobs in (priority DESC, turn, id) order, so a lease reads the first rows whatever the backlog and however many jobs one owner has queued. Jobs waiting for their run_at have no turn and stay out.';

CREATE INDEX originals_checked_idx ON thumbs.originals USING btree (checked_at);

COMMENT ON INDEX thumbs.originals_checked_idx IS 'Rows by their last confirmation, for thumbs.prune_originals.';

CREATE INDEX photo_variants_storage_key_idx ON thumbs.photo_variants USING btree (storage_key);

COMMENT ON INDEX thumbs.photo_variants_storage_key_idx IS 'Whether a current thumbnail names an object (thumbs.object_is_named): collection asks it for every candidate.';

CREATE UNIQUE INDEX photos_external_idx ON thumbs.photos USING btree (external_id, profile) WHERE (external_id IS NOT NULL);

COMMENT ON INDEX thumbs.photos_external_idx IS 'One row per external id and profile: the completion statement''s conflict target for photos with the backend''s id.';

CREATE INDEX photos_render_key_idx ON thumbs.photos USING btree (render_key, job_id DESC) WHERE (render_key IS NOT NULL);

COMMENT ON INDEX thumbs.photos_render_key_idx IS 'Current thumbnails by render key, newest job first: what render reuse offers a job whose original bytes and spec give the same key.';

CREATE UNIQUE INDEX photos_source_idx ON thumbs.photos USING btree (source_url, profile) WHERE (external_id IS NULL);

COMMENT ON INDEX thumbs.photos_source_idx IS 'One row per source identity and profile among photos without an external id: the completion statement''s conflict target for them.';

CREATE INDEX variants_storage_key_idx ON thumbs.variants USING btree (storage_key);

COMMENT ON INDEX thumbs.variants_storage_key_idx IS 'Job-history rows by storage key. Collection asked it until migration 0015, since when only current thumbnails keep an object alive; it now serves only lookups by hand, such as which jobs made an object.';

CREATE INDEX webhook_deliveries_due_idx ON thumbs.webhook_deliveries USING btree (endpoint, next_attempt_at, id) WHERE (state = 'pending'::text);

COMMENT ON INDEX thumbs.webhook_deliveries_due_idx IS 'Pending deliveries per endpoint in due order, for the claim; partial, so delivered history costs nothing.';

CREATE INDEX webhook_deliveries_event_idx ON thumbs.webhook_deliveries USING btree (event_id);

COMMENT ON INDEX thumbs.webhook_deliveries_event_idx IS 'An event''s deliveries, for the cascade when event retention deletes the event.';

CREATE TRIGGER event_log_metadata BEFORE INSERT ON thumbs.event_log FOR EACH ROW WHEN ((new.metadata IS NULL)) EXECUTE FUNCTION thumbs.fill_event_metadata();

CREATE TRIGGER jobs_forgotten_events AFTER UPDATE OF state ON thumbs.jobs FOR EACH ROW WHEN (((new.state = 'forgotten'::text) AND (old.state <> 'forgotten'::text))) EXECUTE FUNCTION thumbs.scrub_forgotten_events();

CREATE TRIGGER jobs_source_key BEFORE INSERT OR UPDATE OF source_url ON thumbs.jobs FOR EACH ROW EXECUTE FUNCTION thumbs.set_source_key();

CREATE TRIGGER jobs_take_turn_insert BEFORE INSERT ON thumbs.jobs FOR EACH ROW WHEN ((new.state = 'queued'::text)) EXECUTE FUNCTION thumbs.take_turn();

CREATE TRIGGER jobs_take_turn_update BEFORE UPDATE OF state, run_at, priority, owner, turn ON thumbs.jobs FOR EACH ROW WHEN ((new.state = 'queued'::text)) EXECUTE FUNCTION thumbs.take_turn();

CREATE TRIGGER lease_only_readable_sources BEFORE UPDATE OF state ON thumbs.jobs FOR EACH ROW WHEN (((old.state = 'queued'::text) AND (new.state = 'running'::text) AND (lower("left"(old.source_url, 5)) = 's3://'::text))) EXECUTE FUNCTION thumbs.lease_only_readable_sources();

CREATE TRIGGER photo_variants_dropped AFTER DELETE ON thumbs.photo_variants FOR EACH ROW EXECUTE FUNCTION thumbs.collect_superseded();

CREATE TRIGGER photo_variants_replaced AFTER UPDATE OF storage_key ON thumbs.photo_variants FOR EACH ROW WHEN ((old.storage_key IS DISTINCT FROM new.storage_key)) EXECUTE FUNCTION thumbs.collect_superseded();

CREATE TRIGGER profiles_checked BEFORE INSERT OR UPDATE OF spec ON thumbs.profiles FOR EACH ROW EXECUTE FUNCTION thumbs.refuse_invalid_profile();

CREATE TRIGGER profiles_version BEFORE UPDATE OF spec ON thumbs.profiles FOR EACH ROW WHEN ((new.spec IS DISTINCT FROM old.spec)) EXECUTE FUNCTION thumbs.bump_profile_version();

ALTER TABLE ONLY thumbs.erasure_keys
    ADD CONSTRAINT erasure_keys_erasure_id_fkey FOREIGN KEY (erasure_id) REFERENCES thumbs.erasures(id) ON DELETE CASCADE;

ALTER TABLE ONLY thumbs.jobs
    ADD CONSTRAINT jobs_profile_fkey FOREIGN KEY (profile) REFERENCES thumbs.profiles(name);

ALTER TABLE ONLY thumbs.photo_variants
    ADD CONSTRAINT photo_variants_photo_id_fkey FOREIGN KEY (photo_id) REFERENCES thumbs.photos(id) ON DELETE CASCADE;

ALTER TABLE ONLY thumbs.variants
    ADD CONSTRAINT variants_job_id_fkey FOREIGN KEY (job_id) REFERENCES thumbs.jobs(id) ON DELETE CASCADE;

ALTER TABLE ONLY thumbs.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_endpoint_fkey FOREIGN KEY (endpoint) REFERENCES thumbs.webhook_endpoints(url) ON DELETE CASCADE;

ALTER TABLE ONLY thumbs.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES thumbs.event_log(id) ON DELETE CASCADE;
