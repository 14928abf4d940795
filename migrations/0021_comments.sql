-- 0021: the migrations' notes as comments on the objects they explain.
--
-- The `--` notes in these files say why each table, column, view, index and function is the way it is,
-- but the schema itself did not carry them: pg_dump (and with it the snapshot, Sources/Queue/SQL/
-- schema.sql) drops them, and psql's \d+ cannot show them. COMMENT ON is kept by both. Every table, view
-- and function of the schema gets one, and so do the indexes and the columns whose reason or meaning is
-- not plain from their name. Comments describe the schema as it is after all migrations, not the
-- history; change a comment in the migration that changes its object.
--
-- The comments that earlier migrations wrote are kept where they are still right. The one on
-- thumbs.jobs.turn in particular is left as migration 0020 wrote it: 0020 reads it (the word "round") to
-- tell whether it already ran, so whoever rewrites it must keep that word.
--
-- Comments only: nothing a statement reads changes. Runs again unchanged on a schema that already has it.

-- Tables.

COMMENT ON TABLE thumbs.jobs IS
  $$The queue and its history: one row per job (a source and a profile), from thumbs.enqueue through its leases and attempts to its final state; retention deletes finished rows. Every row is rewritten several times (lease, heartbeats, outcome), hence the table's fillfactor and eager autovacuum settings.$$;
COMMENT ON TABLE thumbs.variants IS
  $$The job history's thumbnails: one row per variant a succeeded job made (or took by render key), deleted with its job by retention. These rows do not keep objects from collection: one whose storage_key no current thumbnail names may point to an object that has been deleted, so read thumbs.current_variants for what exists.$$;
COMMENT ON TABLE thumbs.photos IS
  $$A photo's current thumbnails per profile, apart from the job history: one row per photo (its external id, else its source's identity) and profile, naming the newest succeeded job. Written with a job's success, and only by a newer job than the one it names; retention never touches it.$$;
COMMENT ON TABLE thumbs.photo_variants IS
  $$The current thumbnails of each thumbs.photos row, copied from the variant rows of the job it names: what thumbs.current_variants shows and render reuse offers. The only rows that keep a storage object from collection: triggers make a key these rows let go of a collection candidate.$$;
COMMENT ON TABLE thumbs.originals IS
  $$What the origin served for each source, as of the last time a worker asked: one row per source identity, written once per download or revalidation rather than once per job. For operators (sizes, duplicates, changed originals) and for the validators (ETag, Last-Modified) that a worker's conditional request sends.$$;
COMMENT ON TABLE thumbs.profiles IS
  $$Named thumbnail specs: the variants a job of the profile makes, and the profile's poster and animation settings. A spec is checked when it is written and versioned whenever it changes; workers read it at every lease, so a change applies to jobs leased afterwards.$$;
COMMENT ON TABLE thumbs.workers IS
  $$The worker registry: one row per worker process, written at start, refreshed every housekeeping round (an upsert, so a worker that was frozen comes back) and deleted at a clean exit; thumbs.expire_workers removes the rows of workers that vanished. The s3:// lease guard and collection read what each worker can do from it.$$;
COMMENT ON TABLE thumbs.event_log IS
  $$Completion events as written: one row per job that ended (succeeded, failed for good, cancelled) and per finished erasure (forgotten), inserted in the same statement as the outcome, so that an event exists exactly when its outcome does. Lean on purpose: thumbs.events builds the JSON payload when it is read. Kept for a retention of its own, apart from the jobs.$$;
COMMENT ON TABLE thumbs.webhook_endpoints IS
  $$The webhook URLs the workers deliver events to, each with a cursor over the events in commit order. A worker that holds an endpoint's row lock moves its cursor and queues one delivery per event; an endpoint that answered 410 Gone is off until thumbs.enable_webhook.$$;
COMMENT ON TABLE thumbs.webhook_deliveries IS
  $$One row per endpoint and event to deliver. Any worker claims due rows with SKIP LOCKED, and a claim pushes next_attempt_at a lease ahead, so a delivery whose worker died mid-POST becomes due again: at least once, never lost. Rows go with their event when event retention deletes it.$$;
COMMENT ON TABLE thumbs.gc_objects IS
  $$Collection of storage objects, a two-phase delete: candidates waiting out the grace (pending), objects marked for deletion (deleting) and fenced against completions that might still name them, and each key's last deletion, kept while a job leased before it could still complete. Objects are content-addressed and shared, so one goes only once no current thumbnail names it.$$;
COMMENT ON TABLE thumbs.erasures IS
  $$One row per profile of a forgotten photo, until collection has decided every key it named (deleted or kept): then its forgotten event is written and the row goes.$$;
COMMENT ON TABLE thumbs.erasure_keys IS
  $$The storage keys an erasure waits on, each deleted or kept once collection decides; the forgotten event lists the deleted ones.$$;
COMMENT ON TABLE thumbs.queue_sample IS
  $$One row: the fleet's shared count of the live queue, for the workers' gauges and readiness. A worker whose sample is older than its interval counts again (one at a time, SKIP LOCKED) and the others read this row, so the cost of counting does not grow with the number of workers.$$;
COMMENT ON TABLE thumbs.schema_migrations IS
  $$One row per migrations/NNNN_name.sql applied, written in the migration's own transaction. Created by thumbd migrate itself before the first migration; a worker waits, not ready, until the newest version here is one its statements can run on.$$;

-- Columns of thumbs.jobs. (thumbhash, render_key, reused_from, stage_ms, rerender, spec_version, owner
-- and turn keep the comments of the migrations that added them.)

COMMENT ON COLUMN thumbs.jobs.source_url IS
  $$The URL to fetch, as enqueued: a presigned URL with its signature, or s3://BUCKET/KEY. A queued job takes the newer URL when the same photo or source is enqueued again; NULL once the job is forgotten.$$;
COMMENT ON COLUMN thumbs.jobs.state IS
  $$queued (waiting or due), running (leased), or final: succeeded, failed (for good), cancelled, or forgotten (scrubbed by thumbs.forget). An attempt that will be retried sends the job back to queued with a later run_at.$$;
COMMENT ON COLUMN thumbs.jobs.priority IS
  $$Higher goes first; owners take turns only among jobs of equal priority. Re-render jobs are queued far below the default, so that uploads go first.$$;
COMMENT ON COLUMN thumbs.jobs.attempts IS
  $$Attempts used, counted at lease, so that an original that crashes every worker that takes it still runs out of attempts. A hand-back at a clean stop, a failure caused by the worker's own configuration and a completion refused by collection give theirs back; thumbs.retry resets it.$$;
COMMENT ON COLUMN thumbs.jobs.run_at IS
  $$When the job is due: its enqueue, a scheduled time or the end of a retry's backoff. A queued job whose run_at is ahead has no turn until it comes.$$;
COMMENT ON COLUMN thumbs.jobs.error_code IS
  $$The last failed attempt's code, from a stable set (the README's error codes). A queued job waiting out a backoff keeps it; success clears it.$$;
COMMENT ON COLUMN thumbs.jobs.last_error IS
  $$The last failed attempt's message, with any password or presigned secret in a URL masked.$$;
COMMENT ON COLUMN thumbs.jobs.metadata IS
  $$The backend's JSON, stored as given: every event of the job carries it, and a re-render job carries that of the job that made the photo's thumbnails. Emptied when the job is forgotten.$$;
COMMENT ON COLUMN thumbs.jobs.started_at IS
  $$When the present or last attempt was leased (NULL after a hand-back or thumbs.retry). Collection compares it with its fence and with an object's deletion to tell which completions might have missed them.$$;
COMMENT ON COLUMN thumbs.jobs.finished_at IS
  $$When the job reached its final state: what retention and the throughput view go by.$$;
COMMENT ON COLUMN thumbs.jobs.lease_token IS
  $$The present lease: a fresh random token at every lease, NULL when the job is not running. Every write a worker makes for the job is fenced on it (and on state running), so a worker whose lease expired and was taken, or whose job was cancelled, writes nothing.$$;
COMMENT ON COLUMN thumbs.jobs.lease_expires_at IS
  $$When the lease runs out unless a heartbeat extends it; after that any worker's rescue requeues the job (or fails it, out of attempts). Heartbeats change only this column, which no index covers, so that they are HOT updates.$$;
COMMENT ON COLUMN thumbs.jobs.leased_by IS
  $$The worker (thumbs.workers.id) of the present or last lease; kept after the job ends.$$;
COMMENT ON COLUMN thumbs.jobs.attempt_log IS
  $$The attempts that ended without success, oldest first, bounded by thumbs.append_attempt: one object each with attempt, worker, started_at, ended_at, outcome (retry, failed, lease_expired, handed_back or deferred), error_code and error. On the row rather than in a table of its own, so a job costs no extra insert; thumbs.job_attempts shows it as rows.$$;
COMMENT ON COLUMN thumbs.jobs.shares_source IS
  $$Set by thumbs.enqueue on the queued jobs of a source that more than one live job names (the same photo under several profiles). The lease looks for a picked job's siblings only when it is set, so they come along and the original is downloaded once; never cleared, and never set on jobs inserted without thumbs.enqueue.$$;
COMMENT ON COLUMN thumbs.jobs.source_key IS
  $$The source's identity, thumbs.source_identity(source_url): what unique enqueue, shared downloads and forgetting compare, so that two signings of one presigned URL are one source. Kept by the jobs_source_key trigger on insert and whenever source_url changes rather than generated: PostgreSQL would compute a generated column again at every lease, heartbeat and outcome.$$;
COMMENT ON COLUMN thumbs.jobs.external_id IS
  $$The backend's own id for the photo (thumbs.enqueue's external_id). With one, it and the profile decide what a job stands for, whatever its URL; without one, the source's identity does.$$;
COMMENT ON COLUMN thumbs.jobs.warnings IS
  $$What a succeeded job has to say about its original, as a list of {"code", "message"} objects (such as truncated_image); empty when there is nothing to say.$$;
COMMENT ON COLUMN thumbs.jobs.media IS
  $$For a video original, what it was: {"kind": "video", "duration_seconds", "width", "height", "codec", "container", "bit_depth", "dynamic_range"}; NULL for a photo.$$;

-- Columns of the other tables.

COMMENT ON COLUMN thumbs.variants.storage_key IS
  $$The object's key under the storage root: a hash of the thumbnail's content, so identical outputs share one object.$$;
COMMENT ON COLUMN thumbs.photos.external_id IS
  $$The backend's photo id; NULL for a photo known only by its source (source_url).$$;
COMMENT ON COLUMN thumbs.photos.source_url IS
  $$The identity of the source the current thumbnails were rendered from (thumbs.source_identity of the job's URL, as in thumbs.jobs.source_key), not a URL to fetch: a presigned URL appears here without its signature. Without an external id it is, with the profile, what identifies the photo; last_source_url holds the URL as enqueued.$$;
COMMENT ON COLUMN thumbs.photos.job_id IS
  $$The job whose thumbnails are current (made, or taken by render key). No foreign key: retention may have pruned that job.$$;
COMMENT ON COLUMN thumbs.photos.render_key IS
  $$The render key of the current thumbnails: a job whose original bytes and profile spec give the same key takes these thumbnails instead of rendering.$$;
COMMENT ON COLUMN thumbs.photos.spec_version IS
  $$The profile version the current thumbnails were made with, as their job leased it: older than thumbs.profiles.version means stale, for thumbs.rerender.$$;
COMMENT ON COLUMN thumbs.photo_variants.storage_key IS
  $$The object's key under the storage root. While any row here names it, collection keeps the object; a key a row lets go of becomes a collection candidate.$$;
COMMENT ON COLUMN thumbs.originals.url IS
  $$The source's identity as thumbd compares it (thumbs.source_identity), with a URL's password masked: never a presigned signature, so a source re-signed many times has one row.$$;
COMMENT ON COLUMN thumbs.originals.sha256 IS
  $$SHA-256 of the original's bytes (hex): the same bytes under two URLs have the same value, and render keys are built from it.$$;
COMMENT ON COLUMN thumbs.originals.format IS
  $$The format read from the file's header; NULL, like width and height, when thumbd cannot size the format without decoding it.$$;
COMMENT ON COLUMN thumbs.originals.width IS
  $$Pixel width stored in the file, before EXIF orientation is applied.$$;
COMMENT ON COLUMN thumbs.originals.height IS
  $$Pixel height stored in the file, before EXIF orientation is applied.$$;
COMMENT ON COLUMN thumbs.originals.fetched_at IS
  $$The last full download.$$;
COMMENT ON COLUMN thumbs.originals.checked_at IS
  $$The last time the origin confirmed the copy, by a download or a 304: what thumbs.prune_originals goes by.$$;
COMMENT ON COLUMN thumbs.originals.downloads IS
  $$Full downloads of the source by any worker: one for several profiles enqueued together.$$;
COMMENT ON COLUMN thumbs.originals.revalidations IS
  $$Conditional requests the origin answered with 304 Not Modified: a cached copy confirmed without downloading it again.$$;
COMMENT ON COLUMN thumbs.profiles.spec IS
  $${"variants": [...]} with optional "poster" and "animation" settings. The profiles_checked trigger refuses a spec with problems (thumbs.check_profile), in the worker's own words.$$;
COMMENT ON COLUMN thumbs.profiles.version IS
  $$Raised by the profiles_version trigger whenever the spec changes (updated_at with it). Leases send it with the spec, and thumbnails made with an older version are stale (thumbs.rerender).$$;
COMMENT ON COLUMN thumbs.workers.id IS
  $$host:pid:random, as the worker's log and thumbs.jobs.leased_by name it.$$;
COMMENT ON COLUMN thumbs.workers.memory_budget IS
  $$Bytes of the worker's memory budget, which its decodes and downloads are admitted against.$$;
COMMENT ON COLUMN thumbs.workers.lease_ttl IS
  $$The worker's lease TTL: it heartbeats every third of it, counts as stale after one without a heartbeat, and its row expires after three (at least a minute).$$;
COMMENT ON COLUMN thumbs.workers.state IS
  $$running, or stopping: a stop was requested and the worker is finishing its jobs (or handing them back) before it deletes its row.$$;
COMMENT ON COLUMN thumbs.workers.jobs_succeeded IS
  $$Counted since the process started and refreshed every housekeeping round, like jobs_failed, jobs_retried and leases_lost.$$;
COMMENT ON COLUMN thumbs.workers.jobs_retried IS
  $$Attempts that ended in a backoff, since the process started.$$;
COMMENT ON COLUMN thumbs.workers.leases_lost IS
  $$Jobs whose lease the worker lost (expired and taken by a rescue, or cancelled), since the process started: a count that keeps rising means the worker stalls for longer than its lease TTL.$$;
COMMENT ON COLUMN thumbs.workers.source_schemes IS
  $$The schemes of source URLs the worker reads. A worker of a release that does not say registers the default, http and https, and the lease_only_readable_sources trigger keeps s3:// jobs from it during a rolling upgrade.$$;
COMMENT ON COLUMN thumbs.workers.fences_collection IS
  $$True for a worker whose completion statement refuses to record a job that names an object being deleted. Collection deletes nothing while a row says false: a worker of an older release, which would record it.$$;
COMMENT ON COLUMN thumbs.event_log.id IS
  $$From a sequence, so not in commit order: a transaction that took an id may commit after one that took a higher id. Read events in (txid, id) order, through thumbs.events_after.$$;
COMMENT ON COLUMN thumbs.event_log.job_id IS
  $$The job, or for a forgotten event the job thumbs.forget named (else the profile's newest). No foreign key: the job's row may be pruned while its events are kept.$$;
COMMENT ON COLUMN thumbs.event_log.txid IS
  $$The writing transaction's id: thumbs.events_after hands events out in (txid, id) order and only below the snapshot's xmin, so that none can commit behind a reader's cursor.$$;
COMMENT ON COLUMN thumbs.event_log.source_url IS
  $$The job's URL masked by thumbs.redact_url (no password, no presigned secret): the secret never reaches this table. NULL once the job is forgotten, and in a forgotten event.$$;
COMMENT ON COLUMN thumbs.event_log.variants IS
  $$A success's thumbnails, one object each (name, width, height, format, bytes, storage_key, and url when the workers have a public URL base); NULL for other kinds.$$;
COMMENT ON COLUMN thumbs.event_log.storage_keys IS
  $$A forgotten event's deleted keys; keys that another photo still named were kept and are not listed.$$;
COMMENT ON COLUMN thumbs.event_log.metadata IS
  $$The job's metadata. The writer gives it, or the event_log_metadata trigger copies it from the job; emptied when the job is forgotten.$$;
COMMENT ON COLUMN thumbs.webhook_endpoints.cursor IS
  $$The last event (txid/id, as thumbs.events_after's cursor) whose delivery was queued; events after it are queued next. A new endpoint starts at the newest event: what happened before it existed is sent only by thumbs.replay_webhooks.$$;
COMMENT ON COLUMN thumbs.webhook_endpoints.disabled_at IS
  $$Set when the endpoint answered 410 Gone: nothing is sent to it (its cursor still moves, queueing nothing) until thumbs.enable_webhook.$$;
COMMENT ON COLUMN thumbs.webhook_deliveries.state IS
  $$pending (due at next_attempt_at), delivered (a 2xx answer), given_up (failed for long enough), or stopped (the endpoint answered 410 Gone).$$;
COMMENT ON COLUMN thumbs.webhook_deliveries.next_attempt_at IS
  $$When the delivery is due. A claim pushes it a lease ahead, so a delivery whose worker died is due again once that passes.$$;
COMMENT ON COLUMN thumbs.webhook_deliveries.lease_token IS
  $$The claim of the attempt in flight: only its holder may write the attempt's answer.$$;
COMMENT ON COLUMN thumbs.webhook_deliveries.first_attempt_at IS
  $$The first try: how long retries go on is counted from it.$$;
COMMENT ON COLUMN thumbs.webhook_deliveries.last_status IS
  $$The HTTP status of the last answer; NULL when none came.$$;
COMMENT ON COLUMN thumbs.gc_objects.state IS
  $$pending: a candidate waiting out the grace; deleting: marked, and a completion that names it is refused; NULL: not a candidate (kept, or deleted: see deleted_at). Rows in neither state are pruned once no fence needs them.$$;
COMMENT ON COLUMN thumbs.gc_objects.reason IS
  $$Why it became a candidate: forgotten, pruned, superseded (a current thumbnail replaced or dropped), unclaimed (uploaded by an attempt whose success was not recorded) or orphan (found in storage, named by nothing).$$;
COMMENT ON COLUMN thumbs.gc_objects.queued_at IS
  $$When it became a candidate: the grace counts from here (an orphan's is set back by the grace, so it is due at once).$$;
COMMENT ON COLUMN thumbs.gc_objects.fenced_at IS
  $$Stamped in a later transaction than the mark: every job leased after it sees the mark when it completes, and deletion waits until every running job was leased after it.$$;
COMMENT ON COLUMN thumbs.gc_objects.claim_expires_at IS
  $$The end of the present claim (claimed_by's), after which another collector may take the object over; after a failed delete, when it may be tried again.$$;
COMMENT ON COLUMN thumbs.gc_objects.deleted_at IS
  $$The last deletion from storage. A completion of a job leased before it is refused too: its check that the object existed may have come just before the delete.$$;
COMMENT ON COLUMN thumbs.erasures.job_id IS
  $$The job the forgotten event names: the one thumbs.forget was given, else the profile's newest. No foreign key: the job may be pruned.$$;
COMMENT ON COLUMN thumbs.erasure_keys.outcome IS
  $$deleted, or kept (something live named it); NULL until collection decides.$$;
COMMENT ON COLUMN thumbs.queue_sample.one IS
  $$Always true, the primary key: it keeps the table at one row.$$;
COMMENT ON COLUMN thumbs.queue_sample.ready IS
  $$Queued jobs that were due (run_at passed) when the sample was taken.$$;
COMMENT ON COLUMN thumbs.queue_sample.oldest_ready_seconds IS
  $$How long the oldest due job had waited when the sample was taken; a reader adds the sample's age while any job is due.$$;
COMMENT ON COLUMN thumbs.queue_sample.gc_backlog IS
  $$Storage objects collection still has to decide on or delete (pending or deleting).$$;

-- Views.

COMMENT ON VIEW thumbs.current_variants IS
  $$The backend's read path: each photo's current thumbnails, one row per variant, by external id (or, without one, by source_url, the source's identity) and profile. Retention never removes them; a newer successful job of the photo replaces them, and a failed one leaves them as they were.$$;
COMMENT ON VIEW thumbs.events IS
  $$Completion events with the JSON payload that a backend and a webhook's data carry, built when read from thumbs.event_log. Read them in commit order through thumbs.events_after, not by id.$$;
COMMENT ON VIEW thumbs.failed_jobs IS
  $$Jobs that failed for good, newest first, with their error; cancelled jobs are not in it.$$;
COMMENT ON VIEW thumbs.gc_overview IS
  $$What collection has to do: candidates pending, objects being deleted (and those whose delete failed), the oldest of them, and the erasures whose forgotten event is not written yet.$$;
COMMENT ON VIEW thumbs.job_attempts IS
  $$The jobs' attempt logs as rows: one per attempt that ended without success. The attempt that succeeded is the job row itself (leased_by, started_at, finished_at).$$;
COMMENT ON VIEW thumbs.owner_overview IS
  $$Owners with live jobs, the largest backlog first: who is holding the queue. The NULL owner is the jobs without one, served together as one owner. It counts every live job: on a large queue, ask it now and then.$$;
COMMENT ON VIEW thumbs.queue_overview IS
  $$One row per job state, empty states included, with the age of its oldest job counted from when it was enqueued (not how long it has waited or run).$$;
COMMENT ON VIEW thumbs.rerender_overview IS
  $$Per profile: its photos, how many have thumbnails of an older spec (stale), and its re-render jobs queued, running and succeeded; failed counts the stale photos whose re-render failed for good under the present spec.$$;
COMMENT ON VIEW thumbs.stuck_jobs IS
  $$Running jobs whose lease has expired: their worker died or froze. Every running worker's rescue returns them to the queue; rows that stay here for longer than a lease TTL mean no worker is running.$$;
COMMENT ON VIEW thumbs.throughput IS
  $$Jobs finished per minute over the last hour, empty minutes included, with the median run time of the successes (their last attempt only). Each job counts once, by its present state and finish time, and only while retention keeps it.$$;
COMMENT ON VIEW thumbs.webhook_overview IS
  $$Per webhook endpoint: whether it is off (and why), and its deliveries by state: pending, due, retrying, delivered, given up, stopped.$$;
COMMENT ON VIEW thumbs.worker_overview IS
  $$The registered workers: how many jobs each holds now and its counters since it started. stale: no heartbeat for a whole lease TTL, so the worker is dead or frozen.$$;

-- Functions, with their argument types as the schema spells them.

COMMENT ON FUNCTION thumbs.enqueue(text, text, integer, timestamp with time zone, jsonb, text, text) IS
  $$The backend's way in: queues a job for a source URL and profile and returns its id, or the id of the live job that already stands for the same photo (its external id, else its source's identity) and profile, a queued one taking the newer URL. Refuses a source that can never be fetched, an empty external_id or owner and an unknown profile (SQLSTATE 22023). SECURITY DEFINER with a pinned search path, so a backend role may call it without being able to write jobs itself.$$;
COMMENT ON FUNCTION thumbs.retry(bigint) IS
  $$Puts a failed or cancelled job back in the queue, due now, with its attempts reset and its error cleared (the attempt log is kept). False for any other state, or when the unique indexes refuse it: the photo already has a queued job of the profile (without an external id, a queued or running one). SECURITY DEFINER, for the backend's role.$$;
COMMENT ON FUNCTION thumbs.cancel(bigint) IS
  $$Cancels a queued or running job and writes its cancelled event; false when the job was neither queued nor running. A running job's worker finds its lease gone at its next heartbeat and discards its work. SECURITY DEFINER, for the backend's role.$$;
COMMENT ON FUNCTION thumbs.forget(bigint) IS
  $$Forgets the whole photo a job belongs to (its external id, else its source), every profile and every job: see thumbs.forget_photo. False when the job does not exist or is already forgotten. SECURITY DEFINER, for the backend's role.$$;
COMMENT ON FUNCTION thumbs.forget_external(text) IS
  $$Forgets a photo by the backend's id, every profile and every job, also once its job history was pruned: see thumbs.forget_photo. Returns the number of profiles whose current thumbnails went plus the live jobs forgotten (0: nothing was left). SECURITY DEFINER, for the backend's role.$$;
COMMENT ON FUNCTION thumbs.forget_photo(text, text, bigint) IS
  $$The work of thumbs.forget and thumbs.forget_external: locks the photo's jobs in id order (as completions lock them), records one erasure per profile with the keys the photo named and makes them collection candidates, deletes its variant and current rows, and scrubs its jobs (state forgotten), their events and its originals rows. Returns the profiles with current thumbnails plus the live jobs forgotten, or -1 when nothing of the photo was left.$$;
COMMENT ON FUNCTION thumbs.rerender(text, integer) IS
  $$Queues a re-render job, below every upload's priority, for up to batch_size photos whose current thumbnails of the profile were made with an older spec; it fetches the URL they were made from, as enqueued, and carries that job's metadata. Skips photos with a live job of the profile and those whose re-render failed for good under the present spec; call it until it returns 0. SECURITY DEFINER, for the backend's role.$$;
COMMENT ON FUNCTION thumbs.events_after(text, integer) IS
  $$Completion events in commit order after a cursor (NULL: from the oldest kept), at most max_events; pass the last row's cursor next time. Only events of transactions that ended before every running one began are handed out, so none can commit behind a cursor, and a transaction left open anywhere holds delivery back without losing any. SECURITY DEFINER: the backend's role reads the events without reading the table.$$;
COMMENT ON FUNCTION thumbs.source_identity(text) IS
  $$A source URL's identity: the URL without a presigned URL's signing parameters (SigV4's X-Amz-*, SigV2's AWSAccessKeyId, Signature and Expires), every other part kept. What unique enqueue, shared downloads, photos and forgetting compare, so that two signings of one object are one source; the worker's own rule gives the same answers. PL/pgSQL, which keeps its plans for the session.$$;
COMMENT ON FUNCTION thumbs.source_problem(text) IS
  $$Why a source URL can never be fetched (not an absolute URL, a scheme thumbd does not read, no host, a bad port, an s3:// URL without a key, a space or control character in an http(s) URL), or NULL; thumbs.enqueue refuses such a source. The worker's own check gives the same answers; what only a fetch can tell (a private address, a redirect) stays the worker's.$$;
COMMENT ON FUNCTION thumbs.redact_url(text) IS
  $$A URL as thumbd shows it: a userinfo password and a presigned URL's credential, signature and token masked as ****, the same answers as the worker's own masking. SQL and not STRICT, so that PostgreSQL can inline it into the statements that write events.$$;
COMMENT ON FUNCTION thumbs.check_profile(jsonb) IS
  $$What is wrong with a profile spec, in the worker's own words: at most one problem per variant, every variant's; empty when the spec is valid. The profiles_checked trigger refuses a spec with problems; call it to check a spec without saving it.$$;
COMMENT ON FUNCTION thumbs.spec_integer(jsonb) IS
  $$A JSON number that is whole (82, 82.0 and 8.2e1 alike), as numeric, else NULL: how thumbs.check_profile reads integer settings, as the worker does.$$;
COMMENT ON FUNCTION thumbs.prune(interval, integer) IS
  $$Retention: deletes up to batch_size jobs that ended (succeeded, failed, cancelled or forgotten) before now() - older_than, their variant rows by cascade; the keys they named that no current thumbnail names become collection candidates. Short and SKIP LOCKED, so safe beside running workers; returns how many, and is called until it returns less than batch_size.$$;
COMMENT ON FUNCTION thumbs.prune_events(interval, integer) IS
  $$Event retention: deletes the events older than older_than among the batch_size oldest ids (ids follow time closely enough), so each call reads one batch and the table needs no index for it; their webhook deliveries go by cascade. Returns how many; call it again while it returns batch_size.$$;
COMMENT ON FUNCTION thumbs.prune_originals(interval, integer) IS
  $$Deletes up to batch_size thumbs.originals rows no worker has confirmed (checked_at) for older_than; workers call it with the same age as thumbs.prune. Returns how many.$$;
COMMENT ON FUNCTION thumbs.expire_workers() IS
  $$Deletes the registry rows of workers that stopped heartbeating three lease TTLs ago (at least a minute): a worker that was killed or lost never deletes its own. Returns how many.$$;
COMMENT ON FUNCTION thumbs.append_attempt(jsonb, jsonb) IS
  $$Appends an entry to a job's attempt log, dropping the oldest beyond the last 10, so that the log stays bounded.$$;
COMMENT ON FUNCTION thumbs.add_gc_candidates(text[], text, timestamp with time zone) IS
  $$Makes storage keys collection candidates (pending, with the reason given), their grace counted from since; a key collected or kept before becomes one again, keeping the time of its last deletion for the completion fence, and a key already pending or marked is left as it is. Every source of candidates goes through it. Returns how many were added.$$;
COMMENT ON FUNCTION thumbs.object_is_named(text) IS
  $$Whether a current thumbnail (thumbs.photo_variants) names the storage key: since migration 0015 the only thing that keeps an object from collection; the job history's thumbs.variants rows do not.$$;
COMMENT ON FUNCTION thumbs.enable_webhook(text) IS
  $$Turns back on an endpoint that answered 410 Gone; returns whether it was off. Deliveries the 410 stopped stay stopped: thumbs.replay_webhooks sends the events from while it was off.$$;
COMMENT ON FUNCTION thumbs.replay_webhooks(timestamp with time zone, text) IS
  $$Queues again, for one endpoint (NULL: every endpoint that is on), every kept event created at or after since: delivered, given-up and stopped deliveries are sent again under the same webhook-id, and deliveries are added for events from before the endpoint existed or from while it was off. Returns how many.$$;
COMMENT ON FUNCTION thumbs.set_source_key() IS
  $$Trigger function of jobs_source_key: sets thumbs.jobs.source_key to thumbs.source_identity(source_url) when a job is inserted or its source_url changes, and only then.$$;
COMMENT ON FUNCTION thumbs.take_turn() IS
  $$Trigger function of jobs_take_turn_insert and jobs_take_turn_update: gives a queued, due job its turn (see thumbs.jobs.turn), none while its run_at is ahead, and keeps a queued job's turn while its priority and owner stay. Its planner settings allow index scans only: its plans are kept for the session, perhaps made while the table was nearly empty.$$;
COMMENT ON FUNCTION thumbs.lease_only_readable_sources() IS
  $$Trigger function of lease_only_readable_sources: skips the lease of an s3:// job by a worker whose registry row does not list s3 (a worker of an older release, during a rolling upgrade), so the job stays queued with its attempts untouched for a worker that reads it. A worker not yet registered is let through.$$;
COMMENT ON FUNCTION thumbs.bump_profile_version() IS
  $$Trigger function of profiles_version: raises a profile's version, and sets updated_at, whenever its spec changes, so that thumbnails made with the older spec are known to be stale.$$;
COMMENT ON FUNCTION thumbs.refuse_invalid_profile() IS
  $$Trigger function of profiles_checked: refuses (SQLSTATE 23514) a profile whose spec thumbs.check_profile finds problems in, naming them, so that a mistake fails when it is saved rather than in every job of the profile.$$;
COMMENT ON FUNCTION thumbs.fill_event_metadata() IS
  $$Trigger function of event_log_metadata: an event written without metadata (by thumbs.cancel, or a worker of an older release) gets its job's.$$;
COMMENT ON FUNCTION thumbs.scrub_forgotten_events() IS
  $$Trigger function of jobs_forgotten_events: when a job is forgotten, its earlier events lose their metadata along with what thumbs.forget_photo scrubs.$$;
COMMENT ON FUNCTION thumbs.collect_superseded() IS
  $$Trigger function of photo_variants_replaced and photo_variants_dropped: a storage key a current thumbnail lets go of (an edit, a re-render, a variant the profile dropped) becomes a collection candidate, reason superseded. A trigger rather than part of the completion statement, so that it sees the replaced row even when two completions of one photo race.$$;

-- Indexes.

COMMENT ON INDEX thumbs.jobs_turn_idx IS
  $$The lease's line: due queued jobs in (priority DESC, turn, id) order, so a lease reads the first rows whatever the backlog and however many jobs one owner has queued. Jobs waiting for their run_at have no turn and stay out.$$;
COMMENT ON INDEX thumbs.jobs_owner_turn_idx IS
  $$An owner's last place in a priority's line, for the jobs_take_turn triggers. Jobs without an owner are keyed '' (which thumbs.enqueue refuses as an owner): keyed on owner IS NULL, the index's order would not serve the lookup, which would then read all of their line.$$;
COMMENT ON INDEX thumbs.jobs_deferred_idx IS
  $$Queued jobs waiting for their run_at, which have no turn yet: the workers give the due ones their turn from it, the longest due first.$$;
COMMENT ON INDEX thumbs.jobs_ready_idx IS
  $$Every queued job in (priority DESC, run_at, id) order: the lease's order before owners took turns (migration 0019). The queue depth count scans it for queued, due and the oldest run_at; partial, so finished jobs cost it nothing.$$;
COMMENT ON INDEX thumbs.jobs_running_idx IS
  $$Running jobs, for the rescue of expired leases, the workers view and collection's fence. Keyed on id, unique and growing, rather than on lease_expires_at or leased_by, which repeat across a leased batch and slowed the queue; and heartbeats, which change only lease_expires_at, stay HOT.$$;
COMMENT ON INDEX thumbs.jobs_finished_idx IS
  $$Ended jobs by finish time, for retention and the throughput view. id makes each key unique, since a batch of outcomes ends at one now().$$;
COMMENT ON INDEX thumbs.jobs_live_source_anonymous_idx IS
  $$At most one live job per source identity and profile among the jobs without an external id: what makes thumbs.enqueue race-free for them.$$;
COMMENT ON INDEX thumbs.jobs_queued_external_idx IS
  $$At most one queued job per external id and profile: what makes thumbs.enqueue race-free for photos with the backend's id. Running jobs are left out, so that a new original can be queued behind a running job of the photo.$$;
COMMENT ON INDEX thumbs.jobs_external_idx IS
  $$A photo's jobs by the backend's id: for forgetting, re-rendering and a backend's own lookups.$$;
COMMENT ON INDEX thumbs.jobs_source_key_idx IS
  $$Every job of a source identity, ended ones too: the lease's siblings, the shares_source mark of thumbs.enqueue, and forgetting a photo that has no external id.$$;
COMMENT ON INDEX thumbs.jobs_render_key_idx IS
  $$Succeeded jobs by render key, newest first. Render reuse looked them up here until migration 0009; since then it reads thumbs.photos (photos_render_key_idx) instead, and this index serves only lookups by hand.$$;
COMMENT ON INDEX thumbs.jobs_rerender_idx IS
  $$Re-render jobs per profile and state, for thumbs.rerender_overview; partial, so ordinary jobs are not in it.$$;
COMMENT ON INDEX thumbs.originals_checked_idx IS
  $$Rows by their last confirmation, for thumbs.prune_originals.$$;
COMMENT ON INDEX thumbs.photos_external_idx IS
  $$One row per external id and profile: the completion statement's conflict target for photos with the backend's id.$$;
COMMENT ON INDEX thumbs.photos_source_idx IS
  $$One row per source identity and profile among photos without an external id: the completion statement's conflict target for them.$$;
COMMENT ON INDEX thumbs.photos_render_key_idx IS
  $$Current thumbnails by render key, newest job first: what render reuse offers a job whose original bytes and spec give the same key.$$;
COMMENT ON INDEX thumbs.photo_variants_storage_key_idx IS
  $$Whether a current thumbnail names an object (thumbs.object_is_named): collection asks it for every candidate.$$;
COMMENT ON INDEX thumbs.variants_storage_key_idx IS
  $$Job-history rows by storage key. Collection asked it until migration 0015, since when only current thumbnails keep an object alive; it now serves only lookups by hand, such as which jobs made an object.$$;
COMMENT ON INDEX thumbs.event_log_commit_order_idx IS
  $$Events in commit order, (txid, id): what thumbs.events_after, webhook dispatch and a new endpoint's starting cursor read.$$;
COMMENT ON INDEX thumbs.event_log_job_idx IS
  $$A job's events, found when the job is forgotten to scrub them.$$;
COMMENT ON INDEX thumbs.gc_objects_backlog_idx IS
  $$Candidates and marked objects by state and age, for collection's passes and the backlog counts; partial, so the rows kept only for the completion fence cost nothing.$$;
COMMENT ON INDEX thumbs.gc_objects_idle_idx IS
  $$Rows that are no longer candidates, by deletion time: pruned once no job leased before their deletion is still running.$$;
COMMENT ON INDEX thumbs.erasure_keys_undecided_idx IS
  $$Undecided keys by storage key: when collection deletes or keeps an object, the erasures waiting on it are found here.$$;
COMMENT ON INDEX thumbs.webhook_deliveries_due_idx IS
  $$Pending deliveries per endpoint in due order, for the claim; partial, so delivered history costs nothing.$$;
COMMENT ON INDEX thumbs.webhook_deliveries_event_idx IS
  $$An event's deliveries, for the cascade when event retention deletes the event.$$;
