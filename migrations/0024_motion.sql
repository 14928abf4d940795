-- 0024: motion. thumbs.jobs.media of a still with an embedded clip (a Motion Photo) is
-- {"kind": "image", "motion": {"offset", "length", "duration_ms", "codec", "still_ms"}}; both halves of
-- a Live Photo (the still and its MOV) carry the same "live_photo_id". thumbs.live_photos pairs them:
-- per owner, the newest succeeded still and the newest succeeded video of each identifier, once both
-- have succeeded. Jobs without an owner count as one owner, as in the queue.
--
-- jobs_live_photo_idx holds only the succeeded jobs that carry an identifier, so no other write pays
-- for it; an owner's pairs are read from it in order. Runs again unchanged on a schema that has it.

CREATE INDEX IF NOT EXISTS jobs_live_photo_idx
  ON thumbs.jobs (owner, (media->>'live_photo_id'), (media->>'kind'), id DESC)
  WHERE state = 'succeeded' AND media ? 'live_photo_id';
COMMENT ON INDEX thumbs.jobs_live_photo_idx IS
  $$thumbs.live_photos: an owner's succeeded halves of Live Photos, by identifier, newest first.$$;

CREATE OR REPLACE VIEW thumbs.live_photos AS
  SELECT s.owner, s.live_photo_id, s.id AS still_job_id, s.external_id AS still_external_id,
         v.id AS video_job_id, v.external_id AS video_external_id,
         greatest(s.finished_at, v.finished_at) AS paired_at
    FROM (SELECT DISTINCT ON (owner, media->>'live_photo_id')
                 owner, media->>'live_photo_id' AS live_photo_id, id, external_id, finished_at
            FROM thumbs.jobs
           WHERE state = 'succeeded' AND media ? 'live_photo_id' AND media->>'kind' = 'image'
           ORDER BY owner, media->>'live_photo_id', id DESC) s
    JOIN (SELECT DISTINCT ON (owner, media->>'live_photo_id')
                 owner, media->>'live_photo_id' AS live_photo_id, id, external_id, finished_at
            FROM thumbs.jobs
           WHERE state = 'succeeded' AND media ? 'live_photo_id' AND media->>'kind' = 'video'
           ORDER BY owner, media->>'live_photo_id', id DESC) v
      ON v.live_photo_id = s.live_photo_id AND v.owner IS NOT DISTINCT FROM s.owner;
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
