#!/usr/bin/env bash
# bench/ops-partition-race.sh URL: what a cancel racing a worker's fenced write does when finishing a
# job moves its row to another partition (partitioning by state), next to the same race on a plain
# table. For docs/operations.md ("Scaling past one database"). Creates and drops the schema "race".
set -euo pipefail
url=${1:?usage: ops-partition-race.sh DATABASE_URL}
token=00000000-0000-0000-0000-000000000001
race() { # $1: table. Session A cancels and holds its transaction for 2 s; B is complete_jobs' lock step.
  (psql "$url" -qX -c "BEGIN" -c "UPDATE $1 SET state = 'cancelled', lease_token = NULL WHERE id = 1" \
    -c "SELECT pg_sleep(2)" -c "COMMIT" >/dev/null) &
  sleep 0.5
  psql "$url" -X -c "WITH locked AS MATERIALIZED (
      SELECT id FROM $1 WHERE id = 1 AND lease_token = '$token' AND state = 'running' ORDER BY id FOR UPDATE)
    UPDATE $1 j SET state = 'succeeded' FROM locked WHERE j.id = locked.id RETURNING j.id" 2>&1 || true
  wait
}
psql "$url" -qX -v ON_ERROR_STOP=1 <<SQL
DROP SCHEMA IF EXISTS race CASCADE;
CREATE SCHEMA race;
CREATE TABLE race.partitioned (id bigint, state text, lease_token uuid) PARTITION BY LIST (state);
CREATE TABLE race.live PARTITION OF race.partitioned FOR VALUES IN ('queued', 'running');
CREATE TABLE race.done PARTITION OF race.partitioned FOR VALUES IN ('succeeded', 'failed', 'cancelled');
CREATE TABLE race.plain (id bigint, state text, lease_token uuid);
INSERT INTO race.partitioned VALUES (1, 'running', '$token');
INSERT INTO race.plain VALUES (1, 'running', '$token');
SQL
echo "== partitioned by state"; race race.partitioned
echo "== plain table"; race race.plain
psql "$url" -qX -c "DROP SCHEMA race CASCADE"
