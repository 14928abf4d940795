#!/usr/bin/env bash
# make demo: the whole pipeline on one machine, from a clone alone.
# Installs what is missing, builds thumbd, starts a throwaway PostgreSQL, fetches sample
# photos from Debian's wallpaper packages, makes a video, an HDR video, a GIF and an HDR still from
# one of them, serves them over loopback HTTP, enqueues them (plus one URL that 404s), drains the queue with a worker, reports what happened and writes a contact
# sheet (demo/index.html) to look at in a browser.
#
# THUMBD_DEMO_DIR   where photos and thumbnails go (default ./demo, git-ignored)
# THUMBD_DEMO_PHOTOS how many photos (default 20)
# THUMBD_BIN        use this thumbd binary instead of building one
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

step() { printf '\n==> %s\n' "$*"; }

demo=${THUMBD_DEMO_DIR:-$PWD/demo}
mkdir -p "$demo"
demo=$(cd "$demo" && pwd) # the storage URL needs an absolute path
photos=${THUMBD_DEMO_PHOTOS:-20}

step "Debian packages"
scripts/install-deps.sh --demo

if [ -n "${THUMBD_BIN:-}" ]; then
  bin=$THUMBD_BIN
else
  if ! command -v swift >/dev/null 2>&1; then
    echo "demo: no 'swift' on PATH; install a Swift toolchain (https://swift.org/install/linux/)" >&2
    exit 1
  fi
  step "swift build -c release --product thumbd"
  swift build -c release --product thumbd
  bin="$(swift build -c release --show-bin-path)/thumbd"
fi

# Everything started below is stopped on any exit, including Ctrl-C.
origin_pid=""
pgdir=""
cleanup() {
  if [ -n "$origin_pid" ]; then
    kill "$origin_pid" 2>/dev/null || true
    wait "$origin_pid" 2>/dev/null || true
  fi
  if [ -n "$pgdir" ]; then
    "$repo/scripts/pg-temp.sh" stop "$pgdir" || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "PostgreSQL (throwaway)"
# Under /tmp, not in the demo folder: as root the server runs as the postgres user, which
# must be able to reach its directory (a checkout under /root would not allow it).
pgdir=$(mktemp -d /tmp/thumbd-demo-pg.XXXXXX)
DATABASE_URL=$(scripts/pg-temp.sh start "$pgdir")
export DATABASE_URL
echo "DATABASE_URL=$DATABASE_URL"

step "sample photos"
scripts/sample-photos.sh "$demo/originals" "$photos"
mapfile -t names < <(find "$demo/originals" -maxdepth 1 -type f -name '*.jpg' -printf '%f\n' |
  LC_ALL=C sort | head -n "$photos")
echo "${#names[@]} photos in $demo/originals ($(du -sh "$demo/originals" | cut -f1))"

step "a video, an HDR video, a GIF and an HDR still, made from the first photo"
# ffmpeg and avifenc make them here (scripts/demo-media.sh): no media file lives in the repository.
scripts/demo-media.sh "$demo/originals/${names[0]}" "$demo/originals"
media=(fade-in.mp4 hlg.mov animation.gif hdr-pq.avif)
echo "made ${media[*]} in $demo/originals"

step "loopback origin"
origin_out="$pgdir/origin.out"
python3 Tests/Support/origin.py --root "$demo/originals" >"$origin_out" &
origin_pid=$!
port=""
for _ in $(seq 1 100); do
  port=$(awk '$1 == "PORT" { print $2; exit }' "$origin_out")
  [ -n "$port" ] && break
  kill -0 "$origin_pid" 2>/dev/null || { echo "demo: origin.py exited early" >&2; exit 1; }
  sleep 0.05
done
[ -n "$port" ] || { echo "demo: origin.py did not print its port" >&2; exit 1; }
base="http://127.0.0.1:$port"
echo "serving $demo/originals at $base/files/"

step "thumbd migrate"
"$bin" migrate

step "thumbd enqueue"
urlquote() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1"; }
for name in "${names[@]}"; do
  "$bin" enqueue "$base/files/$(urlquote "$name")" >/dev/null
done
echo "enqueued ${#names[@]} photos"
for name in "${media[@]}"; do
  "$bin" enqueue "$base/files/$name" >/dev/null
done
echo "enqueued ${media[*]} (a video's thumbnails are its poster frame; HDR is tone-mapped to SDR)"
# The same photos shared again under other URLs, enqueued after the rest: their bytes and profile match
# a job that has succeeded by the time they run, so they take its variants without decoding.
shares=0
for name in "${names[@]:0:3}"; do
  "$bin" enqueue "$base/files/$(urlquote "$name")?shared=1" >/dev/null
  shares=$((shares + 1))
done
echo "enqueued $shares of them again under another URL (a share: same bytes, rendered once)"
# One that cannot succeed, to show how a failure is recorded.
"$bin" enqueue "$base/status/404" >/dev/null
echo "enqueued $base/status/404 (expected to fail: not_found)"
# And an upload that is not a photo at all, for a failure of another kind.
printf '<html><body>Not found (an error page served as the upload)</body></html>\n' >"$demo/originals/not-a-photo.jpg"
"$bin" enqueue "$base/files/not-a-photo.jpg" >/dev/null
echo "enqueued $base/files/not-a-photo.jpg (expected to fail: unsupported_format)"

# A fresh thumbnail folder each run: job ids restart with the fresh database.
rm -rf "$demo/thumbnails"
mkdir -p "$demo/thumbnails"

step "thumbd worker --drain --concurrency 2"
worker_log="$demo/worker.log"
start=$(date +%s.%N)
worker_status=0
"$bin" worker --drain --concurrency 2 --storage "file://$demo/thumbnails" \
  --allow-hosts 127.0.0.1 --http-address 127.0.0.1:0 >"$worker_log" 2>&1 || worker_status=$?
end=$(date +%s.%N)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
if [ "$worker_status" -ne 0 ]; then
  echo "demo: worker exited with status $worker_status; last lines of $worker_log:" >&2
  tail -n 40 "$worker_log" >&2
  exit "$worker_status"
fi
echo "worker finished in ${elapsed}s (log: $worker_log)"

step "summary"
sql() { psql "$DATABASE_URL" -X -q -P pager=off -v ON_ERROR_STOP=1 "$@"; }
sql -c "SELECT state, error_code, count(*) FROM thumbs.jobs GROUP BY 1, 2 ORDER BY 1, 2"
sql -c "SELECT count(*) AS variants, coalesce(sum(bytes), 0) AS total_bytes,
               pg_size_pretty(coalesce(sum(bytes), 0)::bigint) AS total_size
          FROM thumbs.variants"
echo "elapsed: ${elapsed}s for ${#names[@]} photos with 2 workers"
sql -c "SELECT count(*) FILTER (WHERE reused_from IS NOT NULL) AS reused_renders,
               count(*) FILTER (WHERE reused_from IS NULL) AS rendered
          FROM thumbs.jobs WHERE state = 'succeeded'"
sql -c "SELECT job_id, name, width, height, bytes, storage_key
          FROM thumbs.variants ORDER BY job_id, name LIMIT 8"
sql -c "SELECT id, source_url, error_code, last_error
          FROM thumbs.jobs WHERE state = 'failed' ORDER BY id"

step "thumbnails"
echo "$demo/thumbnails: $(find "$demo/thumbnails" -type f | wc -l) files, $(du -sh "$demo/thumbnails" | cut -f1)"
# awk reads all of its input, so sort never dies of SIGPIPE under pipefail (head would make it exit 141).
find "$demo/thumbnails" -type f | LC_ALL=C sort | awk 'NR <= 8 { print "  " $0 }'
echo "  ..."

step "contact sheet"
# Every original beside its variants, the ThumbHash placeholders drawn, the failures with their errors.
python3 scripts/contact-sheet.py --storage "$demo/thumbnails" --out "$demo/index.html" \
  --originals "$base/files/=$demo/originals" >/dev/null
echo "open file://$demo/index.html in a browser"
