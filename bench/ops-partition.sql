-- bench/ops-partition.sql: does thumbs.jobs survive being partitioned? For docs/operations.md
-- ("Scaling past one database"). Run on a THROWAWAY database migrated by `thumbd migrate`; it renames
-- and drops thumbs.jobs:
--
--   psql "$SCRATCH_URL" -X -a -v VERBOSITY=terse -f bench/ops-partition.sql 2>&1
--
-- Every statement that fails here is expected to fail: the output is the finding.

\echo '== 1. by state: live (queued, running) and finished partitions'
CREATE TABLE thumbs.jobs_p (LIKE thumbs.jobs INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS)
  PARTITION BY LIST (state);
CREATE TABLE thumbs.jobs_live PARTITION OF thumbs.jobs_p FOR VALUES IN ('queued', 'running');
CREATE TABLE thumbs.jobs_done PARTITION OF thumbs.jobs_p FOR VALUES IN ('succeeded', 'failed', 'cancelled');
-- thumbd's primary key, and the index that makes thumbs.enqueue return the live job's id:
ALTER TABLE thumbs.jobs_p ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX ON thumbs.jobs_p (source_url, profile) WHERE state IN ('queued', 'running');
-- What PostgreSQL accepts instead: the partition key in both.
ALTER TABLE thumbs.jobs_p ADD PRIMARY KEY (id, state);
CREATE UNIQUE INDEX jobs_p_live_unique ON thumbs.jobs_p (source_url, profile, state)
  WHERE state IN ('queued', 'running');
-- thumbs.variants' foreign key (ON DELETE CASCADE is how retention removes variant rows):
CREATE TABLE thumbs.variants_p (job_id bigint NOT NULL REFERENCES thumbs.jobs_p (id) ON DELETE CASCADE);

\echo '== 2. swap it in and enqueue'
ALTER TABLE thumbs.jobs RENAME TO jobs_unpartitioned;
ALTER TABLE thumbs.jobs_p RENAME TO jobs;
SELECT thumbs.enqueue('http://127.0.0.1/files/a.jpg');
-- A unique index on the live partition alone is enforced, but it is not an arbiter for ON CONFLICT
-- through the parent: the enqueue still fails, and a plain second insert is an error, not a no-op.
CREATE UNIQUE INDEX jobs_live_only_unique ON thumbs.jobs_live (source_url, profile)
  WHERE state IN ('queued', 'running');
SELECT thumbs.enqueue('http://127.0.0.1/files/a.jpg');
INSERT INTO thumbs.jobs (source_url, profile, state) VALUES ('http://127.0.0.1/files/b.jpg', 'default', 'running');
INSERT INTO thumbs.jobs (source_url, profile, state) VALUES ('http://127.0.0.1/files/b.jpg', 'default', 'queued');
-- With only the index PostgreSQL accepts on the parent, the same URL is queued and running at once:
DROP INDEX thumbs.jobs_live_only_unique;
INSERT INTO thumbs.jobs (source_url, profile, state) VALUES ('http://127.0.0.1/files/b.jpg', 'default', 'queued');
SELECT id, source_url, state FROM thumbs.jobs ORDER BY id;
-- Finishing a job moves its row to the other partition (a delete and an insert):
UPDATE thumbs.jobs SET state = 'succeeded', finished_at = now() WHERE state = 'running' RETURNING id, tableoid::regclass;

\echo '== 3. by time: monthly partitions of created_at'
DROP TABLE thumbs.jobs CASCADE;
CREATE TABLE thumbs.jobs_t (LIKE thumbs.jobs_unpartitioned INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS)
  PARTITION BY RANGE (created_at);
ALTER TABLE thumbs.jobs_t ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX ON thumbs.jobs_t (source_url, profile) WHERE state IN ('queued', 'running');
-- Accepted, but it only keeps duplicates out of one month's partition (and of one created_at):
CREATE UNIQUE INDEX ON thumbs.jobs_t (source_url, profile, created_at) WHERE state IN ('queued', 'running');
DROP TABLE thumbs.jobs_t;
ALTER TABLE thumbs.jobs_unpartitioned RENAME TO jobs;
