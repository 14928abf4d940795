-- name: jobs_page
-- One page of /jobs, newest first, after the keyset @before (a job id; NULL for the first page): no
-- OFFSET and no count, so a page costs the same on the millionth row as on the first. A filter left
-- NULL is no filter.
--
-- The statement is sent unnamed with its values, so PostgreSQL plans it for them: the NULL tests fold
-- away and each filter finds its index (the primary key backwards, jobs_error_idx, jobs_owner_idx,
-- jobs_external_idx, jobs_source_key_idx for a source prefix, jobs_finished_idx for a time window).
-- @source is a prefix of the source's identity (the URL as enqueued, a presigned URL without its
-- signature: thumbs.source_identity), its LIKE wildcards escaped; @finished_after and @finished_before
-- bound when the job reached its final state.
--
-- The filters without an index of their own (state, profile, time) walk the primary key and test each
-- row, which for a rare match would read the whole table: so they read no lower than @floor (a window
-- of ids below the keyset, JobFilter.window), and the page offers the next window when this one had
-- fewer matches than a page. NULL: no floor (a filter with an index).
-- params: state text?, error_code text?, profile text?, owner text?, external_id text?, source text?
-- params: finished_after timestamptz?, finished_before timestamptz?, before bigint?, floor bigint?
-- params: limit bigint
-- returns: id bigint, state text, profile text, owner text?, external_id text?, source_url text?
-- returns: error_code text?, attempts int, max_attempts int, created text, finished text?, rerender bool
-- deadline: quick
SELECT id, state, profile, owner, external_id, source_url, error_code, attempts, max_attempts,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS created,
       to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS finished, rerender
  FROM thumbs.jobs
 WHERE (@state::text IS NULL OR state = @state)
   AND (@error_code::text IS NULL OR error_code = @error_code)
   AND (@profile::text IS NULL OR profile = @profile)
   AND (@owner::text IS NULL OR owner = @owner)
   AND (@external_id::text IS NULL OR external_id = @external_id)
   AND (@source::text IS NULL
        OR source_key LIKE replace(replace(replace(@source, '\', '\\'), '%', '\%'), '_', '\_') || '%')
   AND (@finished_after::timestamptz IS NULL OR finished_at >= @finished_after)
   AND (@finished_before::timestamptz IS NULL OR finished_at < @finished_before)
   AND (@finished_after::timestamptz IS NULL AND @finished_before::timestamptz IS NULL
        OR state IN ('succeeded', 'failed', 'cancelled', 'forgotten'))
   AND (@before::bigint IS NULL OR id < @before)
   AND (@floor::bigint IS NULL OR id >= @floor)
 ORDER BY id DESC
 LIMIT @limit
