#!/usr/bin/env bash
# A throwaway PostgreSQL for tests and the demo: its own data directory, a free loopback
# port, no durability (it is deleted afterwards), trust auth.
#
#   scripts/pg-temp.sh start DIR   -> prints postgresql://postgres@127.0.0.1:PORT/thumbd (also in DIR/url)
#   scripts/pg-temp.sh stop DIR    -> stops it and deletes DIR
#   scripts/pg-temp.sh pause DIR   -> stops the server, keeping its data (a database outage)
#   scripts/pg-temp.sh resume DIR  -> starts it again on the same port
#
# DIR's parent directories must be searchable by the postgres user when run as root
# (a directory from `mktemp -d` under /tmp is fine; /root is not).
#
# PG_TEMP_LISTEN: the addresses to listen on (default 127.0.0.1). Clients on the networks of those
# addresses are trusted too: the chaos driver's workers reach it from network namespaces.
# PG_TEMP_OPTIONS: more server options, after these (bench/fleet: more connections, pg_stat_statements).
set -euo pipefail

usage() { echo "usage: $0 start|stop|pause|resume DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2

# Use the newest installed major version rather than assuming 15.
pg_bin() {
  local newest
  newest=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null |
    grep -E '^[0-9]+$' | sort -n | tail -n 1 || true)
  if [ -z "$newest" ] || [ ! -x "/usr/lib/postgresql/$newest/bin/pg_ctl" ]; then
    echo "pg-temp: no PostgreSQL server under /usr/lib/postgresql (run scripts/install-deps.sh)" >&2
    exit 1
  fi
  echo "/usr/lib/postgresql/$newest/bin"
}

# PostgreSQL refuses to run as root, so the server side runs as the postgres user then.
# cd / first: the caller's directory (e.g. /root) may be unreadable for postgres.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    (cd / && "$@")
  fi
}

# The server's options; the addresses are remembered in DIR/listen so that resume uses them again.
server_options() {
  local port=$1 listen
  listen=$(cat "$dir/listen" 2>/dev/null || echo 127.0.0.1)
  echo "-c listen_addresses=$listen -c port=$port -c unix_socket_directories=$dir \
-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 ${PG_TEMP_OPTIONS:-}"
}

free_port() {
  # Bind port 0 and let the kernel choose; the tiny race with another taker is covered by
  # the retry loop around pg_ctl start below.
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local bin port url attempt started=""
  bin=$(pg_bin)
  case $dir in *[[:space:]]*) echo "pg-temp: DIR must not contain whitespace: $dir" >&2; exit 2 ;; esac
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd) # the socket directory setting needs an absolute path

  # Starting twice is harmless: hand back the running instance.
  if [ -s "$dir/url" ] && [ -f "$dir/data/postmaster.pid" ] &&
    "$bin/pg_isready" -q -d "$(cat "$dir/url")" 2>/dev/null; then
    cat "$dir/url"
    return 0
  fi
  if [ -e "$dir/data" ]; then
    echo "pg-temp: $dir/data already exists; run '$0 stop $dir' first" >&2
    exit 1
  fi

  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi

  # --no-sync and C.UTF-8: fast, and independent of the caller's LANG (which may name a
  # locale that is not generated on this machine).
  as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 \
    --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
  echo "${PG_TEMP_LISTEN:-127.0.0.1}" >"$dir/listen"
  if [ "${PG_TEMP_LISTEN:-127.0.0.1}" != 127.0.0.1 ]; then
    echo "host all all samenet trust" >>"$dir/data/pg_hba.conf"
  fi

  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 -s start \
      -o "$(server_options "$port")" >/dev/null 2>&1; then
      started=1
      break
    fi
    echo "pg-temp: start on port $port failed (attempt $attempt), retrying" >&2
  done
  if [ -z "$started" ]; then
    echo "pg-temp: could not start PostgreSQL; server log follows" >&2
    cat "$dir/server.log" >&2 || true
    exit 1
  fi

  # pg_ctl -w already waited; pg_isready guards against a server that is up but still
  # refusing TCP connections.
  for _ in $(seq 1 100); do
    if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres; then break; fi
    sleep 0.05
  done
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres || {
    echo "pg-temp: server did not become ready on port $port" >&2
    exit 1
  }

  "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres thumbd
  url="postgresql://postgres@127.0.0.1:$port/thumbd"
  echo "$url" >"$dir/url"
  echo "$url"
}

stop() {
  local bin
  [ -e "$dir" ] || return 0
  bin=$(pg_bin)
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 -s stop >/dev/null 2>&1 ||
      echo "pg-temp: pg_ctl stop failed for $dir (removing it anyway)" >&2
  fi
  rm -rf "$dir"
}

pause() {
  as_owner "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w -t 30 -s stop >/dev/null
}

resume() {
  local port
  port=$(sed -E 's|.*:([0-9]+)/.*|\1|' "$dir/url")
  as_owner "$(pg_bin)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 -s start \
    -o "$(server_options "$port")" >/dev/null
}

case $cmd in
  start) start ;;
  stop) stop ;;
  pause) pause ;;
  resume) resume ;;
  *) usage ;;
esac
