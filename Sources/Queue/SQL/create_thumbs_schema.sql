-- name: create_thumbs_schema
-- The schema everything of thumbd lives in, before the first migration can be recorded.
-- params: none
-- returns: none
-- deadline: none
CREATE SCHEMA IF NOT EXISTS thumbs
