-- 0015: mistakes refused where they are made, payloads a backend can act on alone, and superseded
-- thumbnails collected.
--
-- * thumbs.enqueue refuses a source that can never be fetched (SQLSTATE 22023): no scheme, a scheme
--   thumbd does not read, no host, a bad port, an s3:// URL without a key, a space or control character
--   in an http(s) URL (an S3 key is read byte for byte, spaces included).
--   thumbs.source_problem says why; the worker's SourceURL.problem gives the same answers (SourceURLTests
--   and BackendChecksTests hold the two to one table). What only a fetch can tell (the address a host
--   resolves to, a redirect) stays the worker's: blocked_source.
-- * thumbs.check_profile(spec) lists what is wrong with a profile spec, in the worker's words
--   (ProfileSpec in ThumbCore; the same tests hold them together); thumbs.profiles refuses a spec with
--   problems (SQLSTATE 23514). Profiles already saved are not checked again here: a warning names any
--   that would be refused.
-- * Events carry the job's metadata (thumbs.event_log.metadata). The worker's outcome statements write
--   it; a trigger fills it for every other writer (thumbs.cancel, a worker of the release before).
-- * A thumbnail no current one names any longer (an edit or a re-render replaced it, or the profile lost
--   a variant) becomes a collection candidate (reason `superseded`) when thumbs.photo_variants lets go
--   of it, and is deleted after the grace with the same fenced two-phase delete as a forgotten one. So
--   an object is now kept alive only by a current thumbnail: a finished job's thumbs.variants rows stay
--   as history, naming objects that may be gone (join thumbs.current_variants on storage_key to tell).
-- * A photo remembers the URL its thumbnails were made from as it was enqueued (last_source_url, a
--   presigned URL's signature included) and that job's metadata: a re-render fetches that URL and
--   carries that metadata, and an expired presigned URL fails the re-render job as source_expired,
--   which keeps the current thumbnails and tells the backend (whose metadata it carries) to enqueue a
--   fresh URL.
--
-- Runs again unchanged on a schema that already has it.

-- Why a source URL can never be fetched, or NULL. PL/pgSQL keeps its plans for the session (enqueue
-- calls it once per job).
CREATE OR REPLACE FUNCTION thumbs.source_problem(url text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
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
$$;

CREATE OR REPLACE FUNCTION thumbs.enqueue(
  source_url text,
  profile text DEFAULT 'default',
  priority int DEFAULT 0,
  run_at timestamptz DEFAULT now(),
  metadata jsonb DEFAULT '{}',
  external_id text DEFAULT NULL
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
  IF NOT EXISTS (SELECT 1 FROM thumbs.profiles p WHERE p.name = enqueue.profile) THEN
    RAISE EXCEPTION 'thumbs.enqueue: no profile named %', enqueue.profile USING ERRCODE = '22023';
  END IF;
  key := thumbs.source_identity(enqueue.source_url);
  LOOP
    -- A queued job of the same photo (or, without an external id, of the same source) is the answer,
    -- and takes the newer URL: an edited photo's new original, or a fresh presigned URL.
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

    INSERT INTO thumbs.jobs AS j (source_url, profile, priority, run_at, metadata, external_id)
    VALUES (enqueue.source_url, enqueue.profile, coalesce(enqueue.priority, 0),
            coalesce(enqueue.run_at, now()), coalesce(enqueue.metadata, '{}'), enqueue.external_id)
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

-- A JSON number that is whole (82, 82.0 and 8.2e1 alike), else NULL.
CREATE OR REPLACE FUNCTION thumbs.spec_integer(value jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN jsonb_typeof(value) = 'number' AND value::text::numeric = trunc(value::text::numeric)
                   AND abs(value::text::numeric) < 1e9
              THEN value::text::numeric END;
$$;

-- What is wrong with a profile spec, in the worker's words: at most one problem per variant (the first
-- in ProfileSpec's order), every variant's; empty when the spec is valid.
CREATE OR REPLACE FUNCTION thumbs.check_profile(spec jsonb) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  variant_keys text[] := ARRAY['crop', 'fit', 'format', 'height', 'name', 'progressive', 'quality', 'speed',
                               'subsampling', 'width'];
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
  SELECT min(k COLLATE "C") INTO unknown FROM jsonb_object_keys(spec) AS k WHERE k <> 'variants';
  IF unknown IS NOT NULL THEN
    RETURN ARRAY[format('unknown key "%s" (known: variants)', unknown)];
  END IF;
  IF jsonb_typeof(spec -> 'variants') IS DISTINCT FROM 'array' OR jsonb_array_length(spec -> 'variants') = 0 THEN
    RETURN ARRAY['spec needs a non-empty "variants" array'];
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
$$;

CREATE OR REPLACE FUNCTION thumbs.refuse_invalid_profile() RETURNS trigger
LANGUAGE plpgsql AS $$
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

DROP TRIGGER IF EXISTS profiles_checked ON thumbs.profiles;
CREATE TRIGGER profiles_checked
  BEFORE INSERT OR UPDATE OF spec ON thumbs.profiles
  FOR EACH ROW EXECUTE FUNCTION thumbs.refuse_invalid_profile();

DO $$
DECLARE
  p record;
BEGIN
  FOR p IN SELECT name, thumbs.check_profile(spec) AS problems FROM thumbs.profiles
            WHERE cardinality(thumbs.check_profile(spec)) > 0 LOOP
    RAISE WARNING 'profile ''%'' is invalid: % (its jobs fail as invalid_profile until it is mended)',
      p.name, array_to_string(p.problems, '; ');
  END LOOP;
END
$$;

-- Events carry the job's metadata.
ALTER TABLE thumbs.event_log ADD COLUMN IF NOT EXISTS metadata jsonb;

CREATE OR REPLACE FUNCTION thumbs.fill_event_metadata() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  SELECT j.metadata INTO NEW.metadata FROM thumbs.jobs j WHERE j.id = NEW.job_id;
  RETURN NEW;
END;
$$;

DROP TRIGGER IF EXISTS event_log_metadata ON thumbs.event_log;
CREATE TRIGGER event_log_metadata
  BEFORE INSERT ON thumbs.event_log
  FOR EACH ROW WHEN (NEW.metadata IS NULL)
  EXECUTE FUNCTION thumbs.fill_event_metadata();

CREATE OR REPLACE VIEW thumbs.events AS
  SELECT e.id, e.job_id, e.external_id, e.kind, e.created_at,
         jsonb_build_object('job_id', e.job_id, 'external_id', e.external_id, 'source_url', e.source_url,
                            'profile', e.profile, 'state', e.kind, 'error_code', e.error_code,
                            'error', e.error, 'thumbhash', e.thumbhash,
                            'variants', coalesce(e.variants, '[]'::jsonb), 'attempts', e.attempts,
                            'rerender', e.rerender, 'warnings', coalesce(e.warnings, '[]'::jsonb),
                            'metadata', coalesce(e.metadata, '{}'::jsonb))
           || CASE WHEN e.kind = 'forgotten'
                   THEN jsonb_build_object('storage_keys', coalesce(e.storage_keys, '[]'::jsonb))
                   ELSE '{}'::jsonb END AS payload
    FROM thumbs.event_log e;

-- A forgotten job's earlier events lose their metadata with the rest.
CREATE OR REPLACE FUNCTION thumbs.scrub_forgotten_events() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE thumbs.event_log e SET metadata = '{}' WHERE e.job_id = NEW.id AND e.metadata <> '{}';
  RETURN NEW;
END;
$$;

DROP TRIGGER IF EXISTS jobs_forgotten_events ON thumbs.jobs;
CREATE TRIGGER jobs_forgotten_events
  AFTER UPDATE OF state ON thumbs.jobs
  FOR EACH ROW WHEN (NEW.state = 'forgotten' AND OLD.state <> 'forgotten')
  EXECUTE FUNCTION thumbs.scrub_forgotten_events();

-- Superseded thumbnails: only a current thumbnail keeps an object alive.
CREATE OR REPLACE FUNCTION thumbs.object_is_named(storage_key text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM thumbs.photo_variants pv WHERE pv.storage_key = object_is_named.storage_key);
$$;

CREATE OR REPLACE FUNCTION thumbs.collect_superseded() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM thumbs.add_gc_candidates(ARRAY[OLD.storage_key], 'superseded');
  RETURN NULL;
END;
$$;

DROP TRIGGER IF EXISTS photo_variants_replaced ON thumbs.photo_variants;
CREATE TRIGGER photo_variants_replaced
  AFTER UPDATE OF storage_key ON thumbs.photo_variants
  FOR EACH ROW WHEN (OLD.storage_key IS DISTINCT FROM NEW.storage_key)
  EXECUTE FUNCTION thumbs.collect_superseded();
DROP TRIGGER IF EXISTS photo_variants_dropped ON thumbs.photo_variants;
CREATE TRIGGER photo_variants_dropped
  AFTER DELETE ON thumbs.photo_variants
  FOR EACH ROW EXECUTE FUNCTION thumbs.collect_superseded();

-- Retention: the keys of pruned jobs that no current thumbnail names become candidates (those
-- superseded before this migration, and any a completion of an older release let go of).
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
     AND NOT EXISTS (SELECT 1 FROM thumbs.gc_objects g
                      WHERE g.storage_key = v.storage_key AND g.deleted_at IS NOT NULL);
  DELETE FROM thumbs.jobs j WHERE j.id = ANY (doomed);
  GET DIAGNOSTICS deleted = ROW_COUNT;
  PERFORM thumbs.add_gc_candidates(unnamed, 'pruned');
  RETURN deleted;
END;
$$;

-- What was superseded before this migration, once.
SELECT thumbs.add_gc_candidates(array_agg(DISTINCT v.storage_key), 'superseded')
  FROM thumbs.variants v
 WHERE NOT EXISTS (SELECT 1 FROM thumbs.photo_variants pv WHERE pv.storage_key = v.storage_key)
   AND NOT EXISTS (SELECT 1 FROM thumbs.gc_objects g WHERE g.storage_key = v.storage_key);

-- The URL a photo's thumbnails were made from, as enqueued: what a re-render fetches.
ALTER TABLE thumbs.photos ADD COLUMN IF NOT EXISTS last_source_url text;
COMMENT ON COLUMN thumbs.photos.last_source_url IS 'The URL the current thumbnails were rendered from, as enqueued (a presigned URL with its signature): what thumbs.rerender fetches';
ALTER TABLE thumbs.photos ADD COLUMN IF NOT EXISTS metadata jsonb;
COMMENT ON COLUMN thumbs.photos.metadata IS 'The metadata of the job that made the current thumbnails: what a re-render job carries';
UPDATE thumbs.photos ph SET last_source_url = j.source_url, metadata = j.metadata
  FROM thumbs.jobs j
 WHERE j.id = ph.job_id AND ph.last_source_url IS NULL AND j.source_url IS NOT NULL;

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

-- failed: photos still stale whose re-render for the present spec failed for good (a photo enqueued
-- again since, and rendered, is no longer counted).
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
         (SELECT count(*) FROM thumbs.photos ph
           WHERE ph.profile = p.name AND ph.spec_version IS DISTINCT FROM p.version
             AND EXISTS (
               SELECT 1 FROM thumbs.jobs j
                WHERE j.rerender AND j.state = 'failed' AND j.spec_version = p.version AND j.profile = p.name
                  AND ((ph.external_id IS NOT NULL AND j.external_id = ph.external_id)
                       OR (ph.external_id IS NULL AND j.external_id IS NULL AND j.source_key = ph.source_url))))
           AS failed
    FROM thumbs.profiles p
   ORDER BY p.name;
