-- 0014: warnings on jobs that succeeded with something to say about their original. The first is
-- `truncated_image`: a JPEG cut short whose missing part was small enough to render (the rows that never
-- arrived are grey). Each warning is {"code": ..., "message": ...}; the job's row and its `succeeded`
-- event (so its webhook too) carry the list, empty when there is nothing to say.
--
-- Workers of the release before write no warnings: their jobs keep the empty list.
--
-- Runs again unchanged on a schema that already has it.

ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS warnings jsonb NOT NULL DEFAULT '[]';
ALTER TABLE thumbs.event_log ADD COLUMN IF NOT EXISTS warnings jsonb;

CREATE OR REPLACE VIEW thumbs.events AS
  SELECT e.id, e.job_id, e.external_id, e.kind, e.created_at,
         jsonb_build_object('job_id', e.job_id, 'external_id', e.external_id, 'source_url', e.source_url,
                            'profile', e.profile, 'state', e.kind, 'error_code', e.error_code,
                            'error', e.error, 'thumbhash', e.thumbhash,
                            'variants', coalesce(e.variants, '[]'::jsonb), 'attempts', e.attempts,
                            'rerender', e.rerender, 'warnings', coalesce(e.warnings, '[]'::jsonb))
           || CASE WHEN e.kind = 'forgotten'
                   THEN jsonb_build_object('storage_keys', coalesce(e.storage_keys, '[]'::jsonb))
                   ELSE '{}'::jsonb END AS payload
    FROM thumbs.event_log e;
