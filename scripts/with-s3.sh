#!/usr/bin/env bash
# Run a command beside a throwaway S3-speaking server (scripts/s3-temp.sh: moto, authentication on):
#   scripts/with-s3.sh swift test --skip-build
# THUMBD_TEST_S3_ENDPOINT, _BUCKET, _ACCESS_KEY and _SECRET_KEY describe it; the exit code is the command's.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARGS...]" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
s3dir=$(mktemp -d /tmp/thumbd-s3.XXXXXX)
# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() { "$here/s3-temp.sh" stop "$s3dir" || true; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
while IFS= read -r line; do export "${line?}"; done < <("$here/s3-temp.sh" start "$s3dir")
status=0
"$@" || status=$?
exit "$status"
