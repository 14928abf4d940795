-- name: listen_jobs
-- Subscribes the listener's connection to thumbs_jobs, the channel that thumbs.enqueue,
-- thumbs.retry, rescue_expired_jobs and hand_back_jobs notify (with an empty payload, so PostgreSQL
-- folds the notifications of one transaction into one).
-- params: none
-- returns: none
-- deadline: quick
LISTEN thumbs_jobs
