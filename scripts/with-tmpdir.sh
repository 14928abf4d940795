#!/usr/bin/env bash
# Runs a command with TMPDIR set to a fresh folder that is removed when the command ends, so that the
# temporary folders of a test run (storage, photos, servers' data) do not pile up in /tmp run after run.
set -uo pipefail
dir=$(mktemp -d "${TMPDIR:-/tmp}/thumbd-run.XXXXXX")
# Open like /tmp itself: the PostgreSQL and PgBouncer the tests start run as another user.
chmod 1777 "$dir"
trap 'rm -rf "$dir"' EXIT
TMPDIR="$dir" "$@"
