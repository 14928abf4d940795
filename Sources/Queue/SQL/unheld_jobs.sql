-- name: unheld_jobs
-- Jobs leased to worker @worker_id that it does not hold (@held_ids: the ids it holds): what a lease statement whose
-- answer never came (past its deadline, or its connection broken) may have leased after all, when the
-- database ran it anyway. The worker hands them back (hand_back_jobs, fenced by these lease tokens), so
-- they wait for the next lease rather than for their lease to expire. Only running jobs are looked at
-- (jobs_running_idx).
-- params: worker_id text, held_ids bigint[]
-- returns: id bigint, lease_token uuid
-- deadline: quick
SELECT id, lease_token FROM thumbs.jobs
 WHERE state = 'running' AND leased_by = @worker_id AND id <> ALL (@held_ids::bigint[])
 ORDER BY id
