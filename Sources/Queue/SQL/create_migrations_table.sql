-- name: create_migrations_table
-- The record of applied migrations: one row per migrations/NNNN_name.sql file, written in the same
-- transaction as the migration itself.
-- params: none
-- returns: none
-- deadline: none
CREATE TABLE IF NOT EXISTS thumbs.schema_migrations (
  version text PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
