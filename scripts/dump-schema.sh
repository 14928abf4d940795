#!/usr/bin/env bash
# The thumbs schema of a migrated database as SQL, normalized so that two dumps of the same schema are
# byte-for-byte equal: pg_dump's comments, SET lines, set_config calls, \restrict lines (a fresh random
# key in every dump) and runs of blank lines are dropped.
#
#   scripts/dump-schema.sh DATABASE_URL           print it
#   scripts/dump-schema.sh --write DATABASE_URL   refresh the snapshot, Sources/Queue/SQL/schema.sql
#
# The database must have been migrated and nothing else (the snapshot is what the migrations make).
# SchemaSnapshotTests compares a fresh one with the snapshot; the easiest refresh is that test with
# THUMBD_UPDATE_SCHEMA_SNAPSHOT=1:
#   THUMBD_UPDATE_SCHEMA_SNAPSHOT=1 scripts/with-postgres.sh swift test --filter SchemaSnapshotTests
set -euo pipefail

usage() { echo "usage: $0 [--write] DATABASE_URL" >&2; exit 2; }
write=""
if [ "${1:-}" = "--write" ]; then
  write=1
  shift
fi
[ $# -eq 1 ] || usage
url=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
snapshot="$here/../Sources/Queue/SQL/schema.sql"

# The newest installed pg_dump, like pg-temp.sh's server: an older pg_dump refuses a newer server.
pg_dump_bin() {
  local newest
  newest=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null |
    grep -E '^[0-9]+$' | sort -n | tail -n 1 || true)
  if [ -n "$newest" ] && [ -x "/usr/lib/postgresql/$newest/bin/pg_dump" ]; then
    echo "/usr/lib/postgresql/$newest/bin/pg_dump"
  else
    command -v pg_dump || { echo "dump-schema: no pg_dump (run scripts/install-deps.sh)" >&2; exit 1; }
  fi
}

dump() {
  echo "-- The thumbs schema after all migrations: written by scripts/dump-schema.sh, checked by"
  echo "-- SchemaSnapshotTests. Not a migration, and never applied."
  echo
  "$(pg_dump_bin)" --schema-only --schema=thumbs --no-owner --no-privileges "$url" |
    awk '
      /^--/ || /^SET / || /^SELECT pg_catalog\.set_config\(/ || /^\\(un)?restrict / { next }
      /^[[:space:]]*$/ { blank = 1; next }
      { if (blank && printed) print ""; blank = 0; printed = 1; print }
    '
}

if [ -n "$write" ]; then
  output=$(dump)
  printf '%s\n' "$output" >"$snapshot"
  echo "dump-schema: wrote $(cd "$(dirname "$snapshot")" && pwd)/schema.sql" >&2
else
  dump
fi
