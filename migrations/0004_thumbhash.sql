-- 0004: the ThumbHash of each succeeded job's original.
--
-- A ThumbHash is ~25 bytes (stored base64, ~35 characters) from which an app draws a blurred
-- placeholder, with the right colours and aspect ratio, while the thumbnail itself loads
-- (https://evanw.github.io/thumbhash/). thumbd computes it from the same decode as the variants.
ALTER TABLE thumbs.jobs ADD COLUMN IF NOT EXISTS thumbhash text;

COMMENT ON COLUMN thumbs.jobs.thumbhash IS
  'ThumbHash of the original (base64), set when the job succeeds: a placeholder image for apps';
