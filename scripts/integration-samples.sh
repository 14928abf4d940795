#!/usr/bin/env bash
# The local set-up of docs/integration.md, run for real: a throwaway PostgreSQL, the roles, a backend
# login, an HTTP origin with one photo, the test webhook receiver (signatures and docs/schemas checked)
# and a worker with --public-url-base; then a backend's calls. Prints what the guide's samples show
# (events, a webhook delivery, refusals), so that they are regenerated, not written by hand:
#   scripts/integration-samples.sh [THUMBD_BINARY]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
thumbd=${1:-$root/.build/release/thumbd}
venv=${THUMBD_TEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/thumbd/test-venv}
[ -x "$thumbd" ] || { echo "no thumbd at $thumbd: swift build -c release --product thumbd" >&2; exit 2; }

if [ -z "${DATABASE_URL:-}" ]; then
  exec "$here/with-postgres.sh" "$0" "$thumbd"
fi
work=$(mktemp -d /tmp/thumbd-samples.XXXXXX)
pids=()
# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cd "$root"

mkdir -p "$work/photos"
"$venv/bin/python" -c '
import sys
from PIL import Image, ImageDraw
image = Image.new("RGB", (1600, 1000))
draw = ImageDraw.Draw(image)
for y in range(1000):
    draw.line([(0, y), (1599, y)], fill=(40 + y // 8, 90 + y // 10, 200 - y // 8))
draw.ellipse([600, 250, 1000, 650], fill=(240, 200, 60))
image.save(sys.argv[1], quality=90)' "$work/photos/IMG_2041.jpg"

secret=whsec_ZXhhbXBsZS1rZXktZXhhbXBsZS1rZXktMDEyMzQ1
"$thumbd" migrate >/dev/null
psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -f deploy/sql/roles.sql
psql "$DATABASE_URL" -X -q -c "CREATE ROLE photo_backend LOGIN IN ROLE thumbd_enqueuer"
backend=${DATABASE_URL/postgres@/photo_backend@}
python3 -m http.server 8080 --bind 127.0.0.1 --directory "$work/photos" >/dev/null 2>&1 &
pids+=($!)
"$venv/bin/python" Tests/Support/webhook-receiver.py --secret $secret --port 8787 --schemas docs/schemas \
  --print >"$work/received.txt" &
pids+=($!)
"$thumbd" worker --storage "file://$work/thumbs" --allow-hosts 127.0.0.1 \
  --webhook-url http://127.0.0.1:8787/hook --webhook-secret $secret --webhook-allow-hosts 127.0.0.1 \
  --public-url-base https://cdn.example.com/thumbs/ >"$work/worker.log" 2>&1 &
pids+=($!)
sleep 2

as_backend() { echo "\$ psql \"\$BACKEND_URL\" -c \"$1\""; psql "$backend" -X -c "$1" 2>&1 || true; }
as_backend "SELECT thumbs.enqueue('http://127.0.0.1:8080/IMG_2041.jpg', external_id => 'photo-42', metadata => '{\"user_id\": 42}')"
as_backend "SELECT thumbs.enqueue('http://127.0.0.1:8080/missing.jpg', external_id => 'photo-43', metadata => '{\"user_id\": 42}')"
as_backend "SELECT thumbs.enqueue('photos/IMG_2041.jpg')"
as_backend "SELECT thumbs.enqueue('http:///IMG_2041.jpg')"
for _ in $(seq 1 50); do
  [ "$(grep -c '^(valid' "$work/received.txt" || true)" -ge 2 ] && break
  sleep 0.2
done
as_backend "SELECT jsonb_pretty(payload) FROM thumbs.events WHERE external_id = 'photo-42'"
as_backend "SELECT payload->>'error_code' AS error_code, payload->>'error' AS error, payload->'metadata' AS metadata FROM thumbs.events WHERE external_id = 'photo-43'"
echo "--- webhook deliveries received (each checked against docs/schemas):"
cat "$work/received.txt"
