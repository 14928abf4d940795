-- 0024: motion. thumbs.jobs.media of a still with an embedded clip (a Motion Photo) is
-- {"kind": "image", "motion": {"offset", "length", "duration_ms", "codec", "still_ms"}}; both halves of
-- a Live Photo (the still and its MOV) carry the same "live_photo_id". thumbs.live_photos pairs them:
-- per owner, the newest succeeded still and the newest succeeded video of each identifier, once both
-- have succeeded. Jobs without an owner count as one owner, as in the queue.
--
-- An animated variant of a video, a Live Photo's MOV or a Motion Photo is a preview of its motion: the
-- profile's "animation" gains "preview_seconds" (above 0, at most 60, default 3) and "fps" (1 to 30,
-- default 10), which thumbs.check_profile accepts in the worker's words (ProfileSpec). Workers of the
-- release before refuse both keys as unknown: upgrade the workers before a profile uses them.
--
-- jobs_live_photo_idx (the stills, by owner) and jobs_live_video_idx (the videos, by identifier) hold
-- only the succeeded jobs that carry an identifier, so no other write pays for them: an owner's pairs
-- are read from the first in order, each still's video looked up in the second. Runs again unchanged on a schema that has it.

CREATE INDEX IF NOT EXISTS jobs_live_photo_idx
  ON thumbs.jobs (owner, (media->>'live_photo_id'), id DESC)
  WHERE state = 'succeeded' AND media ? 'live_photo_id' AND media->>'kind' = 'image';
COMMENT ON INDEX thumbs.jobs_live_photo_idx IS
  $$thumbs.live_photos: an owner's succeeded Live Photo stills, by identifier, newest first.$$;
CREATE INDEX IF NOT EXISTS jobs_live_video_idx
  ON thumbs.jobs ((media->>'live_photo_id'), id DESC)
  WHERE state = 'succeeded' AND media ? 'live_photo_id' AND media->>'kind' = 'video';
COMMENT ON INDEX thumbs.jobs_live_video_idx IS
  $$thumbs.live_photos: the succeeded Live Photo videos of an identifier, newest first.$$;

CREATE OR REPLACE VIEW thumbs.live_photos AS
  SELECT s.owner, s.live_photo_id, s.id AS still_job_id, s.external_id AS still_external_id,
         v.id AS video_job_id, v.external_id AS video_external_id,
         greatest(s.finished_at, v.finished_at) AS paired_at
    FROM (SELECT DISTINCT ON (owner, media->>'live_photo_id')
                 owner, media->>'live_photo_id' AS live_photo_id, id, external_id, finished_at
            FROM thumbs.jobs
           WHERE state = 'succeeded' AND media ? 'live_photo_id' AND media->>'kind' = 'image'
           ORDER BY owner, media->>'live_photo_id', id DESC) s
   CROSS JOIN LATERAL (
          SELECT j.id, j.external_id, j.finished_at
            FROM thumbs.jobs j
           WHERE j.state = 'succeeded' AND j.media ? 'live_photo_id' AND j.media->>'kind' = 'video'
             AND j.media->>'live_photo_id' = s.live_photo_id AND j.owner IS NOT DISTINCT FROM s.owner
           ORDER BY j.id DESC
           LIMIT 1) v;
COMMENT ON VIEW thumbs.live_photos IS
  $$Live Photos paired: per owner and identifier, the newest succeeded job of the still and of its video.$$;
COMMENT ON COLUMN thumbs.live_photos.owner IS $$The jobs' owner (NULL: jobs enqueued without one).$$;
COMMENT ON COLUMN thumbs.live_photos.live_photo_id IS
  $$The identifier both halves carry: the still's Apple maker note, the MOV's content identifier.$$;
COMMENT ON COLUMN thumbs.live_photos.still_job_id IS $$The newest succeeded job of the still (a HEIC or JPEG).$$;
COMMENT ON COLUMN thumbs.live_photos.still_external_id IS $$That job's external id.$$;
COMMENT ON COLUMN thumbs.live_photos.video_job_id IS $$The newest succeeded job of the video (the MOV).$$;
COMMENT ON COLUMN thumbs.live_photos.video_external_id IS $$That job's external id.$$;
COMMENT ON COLUMN thumbs.live_photos.paired_at IS $$When the later of the two finished.$$;

COMMENT ON COLUMN thumbs.jobs.media IS
  $$What the original was beyond a plain photo: a video's {"kind": "video", "duration_seconds", "width", "height", "codec", "container", "bit_depth", "dynamic_range", "live_photo_id"}, a still's {"kind": "image", "motion", "live_photo_id"}; NULL for a plain photo.$$;

-- What is wrong with a profile spec, in the worker's words (0018's, with the preview's two settings).
CREATE OR REPLACE FUNCTION thumbs.check_profile(spec jsonb) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
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
$$;
