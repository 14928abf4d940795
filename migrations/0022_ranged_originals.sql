-- 0022: an original read by ranges (a video's head, index and keyframes) is recorded as it is: `bytes` is
-- the file's size, `bytes_read` what was read of it, and `sha256`, which no worker computed, is NULL; the
-- SHA-256 of its container index (`index_sha256`) stands in for it where identical originals are matched
-- (render keys): the index lists the size and place of every sample, so two files with one index and one
-- size are one video.
--
-- Workers of the release before wrote the SHA-256 and size of the parts they held: their rows keep them
-- until the URL is read again. Runs again unchanged on a schema that has it.

ALTER TABLE thumbs.originals ALTER COLUMN sha256 DROP NOT NULL;
ALTER TABLE thumbs.originals ADD COLUMN IF NOT EXISTS bytes_read bigint;
ALTER TABLE thumbs.originals ADD COLUMN IF NOT EXISTS index_sha256 text;

COMMENT ON COLUMN thumbs.originals.bytes IS
  $$The original's size in bytes: the whole file's, also when only parts of it were read (bytes_read).$$;
COMMENT ON COLUMN thumbs.originals.sha256 IS
  $$SHA-256 of the original's bytes (hex): the same bytes under two URLs have the same value, and render keys are built from it. NULL for an original read by ranges, of which no worker read every byte (index_sha256 stands in).$$;
COMMENT ON COLUMN thumbs.originals.bytes_read IS
  $$For an original read by ranges (an MP4 or QuickTime video from an origin that answers ranges): the bytes read of it, its head, its index and the keyframes its poster may come from; NULL when it was read whole.$$;
COMMENT ON COLUMN thumbs.originals.index_sha256 IS
  $$For an original read by ranges: SHA-256 (hex) of its container index (the moov box), which with its size identifies the video where identical originals are matched; NULL when it was read whole.$$;
