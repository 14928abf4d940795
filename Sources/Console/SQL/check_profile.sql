-- name: check_profile
-- A spec checked without saving it (thumbs.check_profile): its problems, none when it may be saved.
-- A text that is not JSON at all is the caller's to report (the cast fails first).
-- params: spec jsonb
-- returns: problem text
-- deadline: quick
SELECT unnest(thumbs.check_profile(@spec::jsonb)) AS problem
