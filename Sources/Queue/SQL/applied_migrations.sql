-- name: applied_migrations
-- The versions (the NNNN of NNNN_name.sql) of the migrations already applied.
-- params: none
-- returns: version text
-- deadline: none
SELECT version FROM thumbs.schema_migrations
