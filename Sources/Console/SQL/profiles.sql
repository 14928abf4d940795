-- name: profiles
-- The saved profiles, with their specs as stored (pretty-printed) and their version.
-- params: none
-- returns: name text, spec text, version bigint, updated text
-- deadline: quick
SELECT name, jsonb_pretty(spec) AS spec, version,
       to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS updated
  FROM thumbs.profiles
 ORDER BY name
