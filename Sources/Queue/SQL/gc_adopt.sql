-- name: gc_adopt
-- Makes orphans (found in storage, named by nothing) collection candidates, due at once: they are
-- older than the grace already. Collection still checks, under its fence, that nothing names them.
-- params: storage_keys text[], grace_seconds float8
-- returns: adopted bigint
-- deadline: batch
SELECT thumbs.add_gc_candidates(@storage_keys::text[], 'orphan',
                                 now() - make_interval(secs => @grace_seconds::float8)) AS adopted
