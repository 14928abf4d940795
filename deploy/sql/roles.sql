-- The three roles of a thumbd deployment (CONTRACT.md, "Deployment"). Run as the owner of the thumbs
-- schema (the role that ran `thumbd migrate`), after every `thumbd migrate`: it is idempotent, and a
-- migration's new tables get their grants here.
--
--   psql "$OWNER_DATABASE_URL" -v ON_ERROR_STOP=1 -f deploy/sql/roles.sql
--
-- The roles cannot log in: give each service a login role of its own that is a member, e.g.
--   CREATE ROLE thumbd_worker_prod LOGIN PASSWORD '...' IN ROLE thumbd_worker;
--   CREATE ROLE photo_backend LOGIN PASSWORD '...' IN ROLE thumbd_enqueuer;
--
-- None of them owns anything, so none can drop, alter or truncate a table; none is granted TRUNCATE.
--
--   thumbd_worker    what a worker does: lease, heartbeat, complete, fail and hand back jobs, record
--                    originals, keep its registry row, rescue, prune (retention), collect storage
--                    objects (migrations/0013), LISTEN/NOTIFY.
--   thumbd_enqueuer  the photo backend: thumbs.enqueue, thumbs.retry, thumbs.cancel, thumbs.forget,
--                    thumbs.forget_external, thumbs.rerender (SECURITY DEFINER), thumbs.source_identity,
--                    thumbs.check_profile (a spec checked without saving it), and reading thumbs.jobs,
--                    thumbs.variants, thumbs.queue_overview, thumbs.owner_overview,
--                    thumbs.current_variants, thumbs.events (and thumbs.events_after),
--                    thumbs.rerender_overview. Nothing else: it cannot update or delete jobs itself,
--                    change profiles or administer webhooks (thumbd_admin's).
--   thumbd_admin     operators: every admin view and function (docs/admin-sql.md), and the data of
--                    every table (fixing a job by hand), but no DDL: `thumbd migrate` runs as the owner.
--   thumbd_reader    a console that only shows (`thumbd console --read-only`), and anyone who may look:
--                    reads every table and view, checks a profile spec (thumbs.check_profile) and masks
--                    a URL (thumbs.redact_url); it can change nothing, and calls none of the functions
--                    that do (retry, cancel, forget, enqueue, rerender).

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'thumbd_worker') THEN
    CREATE ROLE thumbd_worker NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'thumbd_enqueuer') THEN
    CREATE ROLE thumbd_enqueuer NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'thumbd_admin') THEN
    CREATE ROLE thumbd_admin NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'thumbd_reader') THEN
    CREATE ROLE thumbd_reader NOLOGIN;
  END IF;
END
$$;

-- Nothing for anyone else: the schema, its tables and its functions are closed to PUBLIC.
REVOKE ALL ON SCHEMA thumbs FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA thumbs FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA thumbs FROM PUBLIC;
GRANT USAGE ON SCHEMA thumbs TO thumbd_worker, thumbd_enqueuer, thumbd_admin, thumbd_reader;

-- The worker.
GRANT SELECT, UPDATE, DELETE ON thumbs.jobs TO thumbd_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON thumbs.variants TO thumbd_worker;
-- A photo's current thumbnails, written with a job's success (migrations/0009).
GRANT SELECT, INSERT, UPDATE, DELETE ON thumbs.photos, thumbs.photo_variants TO thumbd_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON thumbs.originals TO thumbd_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON thumbs.workers TO thumbd_worker;
-- The fleet's shared count of the live queue (migrations/0019).
GRANT SELECT, INSERT, UPDATE ON thumbs.queue_sample TO thumbd_worker;
GRANT SELECT ON thumbs.profiles, thumbs.schema_migrations TO thumbd_worker;
GRANT SELECT ON thumbs.queue_overview, thumbs.owner_overview, thumbs.worker_overview, thumbs.stuck_jobs TO thumbd_worker;
-- Completion events (migrations/0010) are written by the worker's outcome statements.
GRANT SELECT, INSERT, DELETE ON thumbs.event_log TO thumbd_worker;
GRANT SELECT ON thumbs.events TO thumbd_worker;
-- Webhooks (migrations/0011): endpoints registered and their deliveries claimed and answered by workers.
GRANT SELECT, INSERT, UPDATE ON thumbs.webhook_endpoints TO thumbd_worker;
GRANT SELECT, INSERT, UPDATE ON thumbs.webhook_deliveries TO thumbd_worker;
-- Collection (migrations/0013): candidates marked, claimed and settled by workers; erasures end in their
-- event; retention's pruned keys become candidates.
GRANT SELECT, INSERT, UPDATE, DELETE ON thumbs.gc_objects TO thumbd_worker;
GRANT SELECT, DELETE ON thumbs.erasures TO thumbd_worker;
GRANT SELECT, UPDATE, DELETE ON thumbs.erasure_keys TO thumbd_worker;
GRANT SELECT ON thumbs.gc_overview, thumbs.rerender_overview TO thumbd_worker;
GRANT EXECUTE ON FUNCTION thumbs.append_attempt(jsonb, jsonb), thumbs.expire_workers(),
  thumbs.prune(interval, integer), thumbs.prune_originals(interval, integer),
  thumbs.prune_events(interval, integer), thumbs.redact_url(text), thumbs.object_is_named(text),
  thumbs.add_gc_candidates(text[], text, timestamptz) TO thumbd_worker;

-- The backend.
GRANT EXECUTE ON FUNCTION thumbs.enqueue(text, text, integer, timestamptz, jsonb, text, text), thumbs.retry(bigint),
  thumbs.cancel(bigint), thumbs.forget(bigint), thumbs.forget_external(text), thumbs.rerender(text, integer)
  TO thumbd_enqueuer;
GRANT SELECT ON thumbs.jobs, thumbs.variants, thumbs.queue_overview, thumbs.owner_overview,
  thumbs.current_variants, thumbs.events, thumbs.rerender_overview, thumbs.live_photos TO thumbd_enqueuer;
-- The photo identity of a source URL (how a presigned URL is looked up), and the events' cursor.
GRANT EXECUTE ON FUNCTION thumbs.events_after(text, integer), thumbs.source_identity(text) TO thumbd_enqueuer;
-- A profile spec checked before an operator saves it (migrations/0015).
GRANT EXECUTE ON FUNCTION thumbs.check_profile(jsonb) TO thumbd_enqueuer;

-- Operators.
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA thumbs TO thumbd_admin;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA thumbs TO thumbd_admin;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA thumbs TO thumbd_admin;

-- Readers: SELECT only, and the two functions that change nothing that the console calls.
GRANT SELECT ON ALL TABLES IN SCHEMA thumbs TO thumbd_reader;
GRANT EXECUTE ON FUNCTION thumbs.check_profile(jsonb), thumbs.redact_url(text) TO thumbd_reader;
