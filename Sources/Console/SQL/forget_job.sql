-- name: forget_job
-- The Forget button, once confirmed: thumbs.forget (the whole photo the job belongs to).
-- params: id bigint
-- returns: done bool
-- deadline: quick
SELECT thumbs.forget(@id) AS done
