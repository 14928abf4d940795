-- name: save_profile
-- The profile form's Save: the spec written under the name, created or replaced; the profiles_checked
-- trigger refuses it with its problems if it has any. Its new version.
-- params: name text, spec jsonb
-- returns: version bigint
-- deadline: quick
INSERT INTO thumbs.profiles AS p (name, spec) VALUES (@name, @spec::jsonb)
ON CONFLICT (name) DO UPDATE SET spec = excluded.spec
RETURNING p.version
