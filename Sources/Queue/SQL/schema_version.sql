-- name: schema_version
-- The newest migration applied (its NNNN), NULL when none is. A worker compares it with the one its
-- statements need (SchemaRequirement) before it announces itself or leases anything.
-- params: none
-- returns: version text?
-- deadline: quick
SELECT max(version) AS version FROM thumbs.schema_migrations
