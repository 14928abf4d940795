#!/usr/bin/env bash
# Run a test command and, when it fails, print its failure lines again at the very end:
#   scripts/failures-last.sh swift test --skip-build
# swift-testing reports an issue where it happens, hundreds of lines before the summary, and a CI
# page that keeps only the tail of the output would show "failed with 1 issue" and not which.
# The exit code is the command's.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARGS...]" >&2; exit 2; }
log=$(mktemp /tmp/thumbd-test-log.XXXXXX)
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo
  echo "== what failed (repeated from above) =="
  # An issue line, the detail lines swift-testing puts under it, and XCTest's "error:" lines.
  grep -E -A12 '^(✘|􀢄)|recorded an issue|: error:|Fatal error|Test .* failed' "$log" | grep -v -E '^(✔|◇|􁁛|􀟈)' | tail -n 100
fi
exit "$status"
