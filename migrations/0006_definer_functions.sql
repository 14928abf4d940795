-- 0006: the backend's three functions run with their owner's rights.
--
-- thumbs.enqueue, thumbs.retry and thumbs.cancel insert into and update thumbs.jobs. With them as
-- SECURITY DEFINER, a backend role (deploy/sql/roles.sql: thumbd_enqueuer) can be allowed to call them
-- without being allowed to update or delete jobs itself. The search path is pinned (every table in
-- them is named with its schema), so no caller can slip in objects of its own.
ALTER FUNCTION thumbs.enqueue(text, text, integer, timestamptz, jsonb)
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION thumbs.retry(bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION thumbs.cancel(bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
