#!/usr/bin/env bash
# bench/ops-sizing.sh: end-to-end throughput and memory of one worker, for the Sizing section of
# docs/operations.md. Real database, real loopback origin, file storage.
#
#   DATABASE_URL=... bench/ops-sizing.sh THUMBD ORIGIN_URL PHOTO_DIR CONCURRENCY CPUS BUDGET [ROUNDS]
#
#   THUMBD      the thumbd binary
#   ORIGIN_URL  http://127.0.0.1:PORT of Tests/Support/origin.py serving PHOTO_DIR
#   CPUS        a taskset CPU list for the worker (0, or 0-1)
#   BUDGET      --memory-budget (256MiB)
#   ROUNDS      how many times each photo is enqueued (default 1); each round uses URLs of its own
#               (?r=N) and starts from an empty jobs table, so nothing is reused from an earlier job
#
# It empties thumbs.jobs, thumbs.originals and thumbs.workers: use a throwaway database only.
# Prints the job count, the span from the first lease to the last finish, jobs/s over that span, the
# worker's wall time, its maximum resident set (GNU time), and the highest thumbd_memory_in_use_bytes
# seen on /metrics (sampled every 0.1 s).
set -euo pipefail
thumbd=${1:?THUMBD} origin=${2:?ORIGIN_URL} photos=${3:?PHOTO_DIR} conc=${4:?CONCURRENCY}
cpus=${5:?CPUS} budget=${6:?BUDGET} rounds=${7:-1}
: "${DATABASE_URL:?DATABASE_URL}"

work=$(mktemp -d /tmp/ops-sizing.XXXXXX)
sql() { psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -qAtX -c "$1"; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

total_jobs=0 total_span=0 max_rss=0 max_inuse=0 total_wall=0
for round in $(seq 1 "$rounds"); do
  sql "SET client_min_messages = warning; TRUNCATE thumbs.jobs, thumbs.originals CASCADE; DELETE FROM thumbs.workers;"
  rm -rf "$work/thumbs" && mkdir -p "$work/thumbs"
  # One transaction: the worker starts with the whole batch due.
  {
    echo "BEGIN;"
    for f in "$photos"/*.jpg; do
      echo "SELECT thumbs.enqueue('$origin/files/$(basename "$f")?r=$round');"
    done
    echo "COMMIT;"
  } | psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -qAtX >/dev/null

  : >"$work/inuse"
  (
    while sleep 0.1; do
      curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null |
        awk '/^thumbd_memory_in_use_bytes /{printf "%d\n", $2}' >>"$work/inuse" || true
    done
  ) &
  sampler=$!
  /usr/bin/time -v -o "$work/time" taskset -c "$cpus" "$thumbd" worker --drain \
    --concurrency "$conc" --memory-budget "$budget" --storage "file://$work/thumbs" \
    --allow-hosts 127.0.0.1 --http-address "127.0.0.1:$port" --log-level warning 2>"$work/worker.log"
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true

  read -r jobs ok span < <(sql "SELECT count(*), count(*) FILTER (WHERE state = 'succeeded'),
      extract(epoch FROM max(finished_at) - min(started_at)) FROM thumbs.jobs" | tr '|' ' ')
  rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$work/time")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{print $2}' "$work/time")
  inuse=$(sort -n "$work/inuse" | tail -n 1)
  echo "round=$round jobs=$jobs succeeded=$ok span_s=$span wall=$wall max_rss_kib=$rss max_in_use_bytes=${inuse:-0}"
  [ "$ok" -eq "$jobs" ] || { echo "not every job succeeded:"; sql "SELECT id, error_code, last_error FROM thumbs.jobs WHERE state <> 'succeeded'"; }
  total_jobs=$((total_jobs + ok))
  total_span=$(python3 -c "print($total_span + $span)")
  [ "$rss" -gt "$max_rss" ] && max_rss=$rss
  [ "${inuse:-0}" -gt "$max_inuse" ] && max_inuse=${inuse:-0}
done
python3 - "$total_jobs" "$total_span" "$max_rss" "$max_inuse" "$conc" "$cpus" "$budget" <<'PY'
import sys
jobs, span, rss, inuse, conc, cpus, budget = sys.argv[1:]
jobs, span, rss, inuse = int(jobs), float(span), int(rss), int(inuse)
print(f"concurrency={conc} cpus={cpus} budget={budget} jobs={jobs} "
      f"jobs_per_second={jobs / span:.2f} peak_rss_mib={rss / 1024:.0f} "
      f"peak_in_use_mib={inuse / 2**20:.0f}")
PY
rm -rf "$work"
