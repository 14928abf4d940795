-- name: variant_object
-- The storage key and format of one variant of a job, for the console to read and show.
-- params: job_id bigint, name text
-- returns: storage_key text, format text
-- deadline: quick
SELECT storage_key, format FROM thumbs.variants WHERE job_id = @job_id AND name = @name
