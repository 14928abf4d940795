-- name: record_migration
-- Records a migration as applied, inside the transaction that applies it.
-- params: version text, name text
-- returns: none
-- deadline: none
INSERT INTO thumbs.schema_migrations (version, name) VALUES (@version, @name)
