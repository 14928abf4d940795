-- 0016: videos. A job whose original was a video says so: thumbs.jobs.media and its `succeeded` event
-- (so its webhook too) carry {"kind": "video", "duration_seconds", "width", "height", "codec",
-- "container", "bit_depth", "dynamic_range"}; NULL (JSON null in the payload) for photos.
--
-- Workers of the release before write none: their jobs keep NULL.
--
-- Runs again unchanged on a schema that already has it.

ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS media jsonb;
ALTER TABLE thumbs.event_log ADD COLUMN IF NOT EXISTS media jsonb;

CREATE OR REPLACE VIEW thumbs.events AS
  SELECT e.id, e.job_id, e.external_id, e.kind, e.created_at,
         jsonb_build_object('job_id', e.job_id, 'external_id', e.external_id, 'source_url', e.source_url,
                            'profile', e.profile, 'state', e.kind, 'error_code', e.error_code,
                            'error', e.error, 'thumbhash', e.thumbhash,
                            'variants', coalesce(e.variants, '[]'::jsonb), 'attempts', e.attempts,
                            'rerender', e.rerender, 'warnings', coalesce(e.warnings, '[]'::jsonb),
                            'metadata', coalesce(e.metadata, '{}'::jsonb), 'media', e.media)
           || CASE WHEN e.kind = 'forgotten'
                   THEN jsonb_build_object('storage_keys', coalesce(e.storage_keys, '[]'::jsonb))
                   ELSE '{}'::jsonb END AS payload
    FROM thumbs.event_log e;
