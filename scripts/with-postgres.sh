#!/usr/bin/env bash
# Run a command against a throwaway PostgreSQL that lives only as long as the command:
#   scripts/with-postgres.sh swift test --skip-build
# DATABASE_URL and THUMBD_TEST_DATABASE_URL point at it; the exit code is the command's.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Under /tmp rather than the repo: when run as root the postgres user must be able to
# reach the directory, and a checkout under /root would not allow it.
pgdir=$(mktemp -d /tmp/thumbd-pg.XXXXXX)
# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() { "$here/pg-temp.sh" stop "$pgdir" || true; }
trap cleanup EXIT
# Make INT/TERM run the EXIT trap too, so Ctrl-C never leaves a server behind.
trap 'exit 130' INT
trap 'exit 143' TERM

url=$("$here/pg-temp.sh" start "$pgdir")
export DATABASE_URL=$url
export THUMBD_TEST_DATABASE_URL=$url

# Not exec: the trap has to run after the command to stop the server.
status=0
"$@" || status=$?
exit "$status"
