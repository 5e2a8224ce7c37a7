#!/usr/bin/env bash
# Scratch PostgreSQL clusters for the tests and the benchmarks: the one script that runs initdb and
# pg_ctl for them (the server's own embedded cluster is Sources/NimbusPostgres/EmbeddedCluster.swift).
# A cluster lives in DIR/pg: data in DIR/pg/data, Unix socket only (in DIR/pg), logs DIR/initdb.log
# and DIR/pg/postgres.log. Started as root, it runs as an unprivileged user (initdb refuses root):
# postgres when that user exists, else nimbus (created when missing); started as a normal user, it
# runs as that user. Programs come from Tests/tools.sh's find_tool and pg_find_bin.
#
# Sourced (bash; each function is safe under set -euo pipefail):
#   pg_find_bin                     PG_BIN := the newest /usr/lib/postgresql/*/bin; 1 when there is none
#                                   (from Tests/tools.sh, sourced here with find_tool and root_only)
#   pg_start DIR [SETTING]...       initdb (unless DIR/pg/data holds a cluster already), then start and
#                                   wait until it accepts connections (pg_ctl -w, 60 s). A SETTING is
#                                     NAME=VALUE     a `-c NAME=VALUE` on the server's command line
#                                     --conf LINE    LINE appended to postgresql.conf after initdb (for
#                                                    what ALTER SYSTEM changes later)
#                                     --opts 'RAW'   more server options, as `pg_ctl -o` takes them
#                                   Sets PG_BIN (unless set), PG_SOCKET, PG_DATA, PG_URL (the `postgres`
#                                   database as user nimbus) and PG_RUN_AS (array: the prefix that
#                                   runs a command as the cluster's user; empty when not root).
#   pg_stop DATA [MODE [SECONDS]]   pg_ctl stop -m MODE (fast) -w -t SECONDS (60) as DATA's owner, when
#                                   DATA/postmaster.pid names a running postmaster; if pg_ctl fails,
#                                   SIGQUIT to that PID, SIGKILL 5 s later.
#   run_as_owner PATH COMMAND...    COMMAND as the owner of PATH when root (PostgreSQL's rule)
#   start_test_postgres DIR         the tests' cluster (max_connections 400, fsync and
#                                   synchronous_commit off); exports the NIMBUS_TEST_* variables
#   stop_test_postgres              stops it (-m immediate) and removes DIR
# From a shell: `bash Tests/test-postgres.sh start DIR` (prints the exports) and
# `bash Tests/test-postgres.sh stop DIR`.

source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"

run_as_owner() {
  local path=$1; shift
  if [ "$(id -u)" -eq 0 ]; then
    local owner
    owner=$(stat -c %U "$path")
    if [ "$owner" != root ]; then
      "$(find_tool runuser)" -u "$owner" -- "$@"
      return
    fi
  fi
  "$@"
}

pg_start() {
  local dir=$1; shift
  local opts="" conf=() line
  while [ $# -gt 0 ]; do
    case $1 in
      --conf) conf+=("$2"); shift 2 ;;
      --opts) opts+=" $2"; shift 2 ;;
      *=*) opts+=" -c $1"; shift ;;
      *) echo "pg_start: unknown setting $1" >&2; return 64 ;;
    esac
  done
  if [ -z "${PG_BIN:-}" ]; then
    pg_find_bin || { echo "pg_start: PostgreSQL server programs not found (deploy/install-deps.sh)" >&2; return 1; }
  fi
  PG_SOCKET=$dir/pg
  PG_DATA=$PG_SOCKET/data
  PG_URL="postgresql:///postgres?host=$PG_SOCKET&user=nimbus"
  PG_RUN_AS=()
  mkdir -p "$PG_SOCKET"
  chmod 755 "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    local pg_user=postgres
    if ! id "$pg_user" >/dev/null 2>&1; then
      pg_user=nimbus
      id nimbus >/dev/null 2>&1 || "$(find_tool useradd)" --system --no-create-home --shell /usr/sbin/nologin nimbus
    fi
    chown "$pg_user" "$PG_SOCKET"
    PG_RUN_AS=("$(find_tool runuser)" -u "$pg_user" --)
  fi
  if [ ! -f "$PG_DATA/PG_VERSION" ]; then
    "${PG_RUN_AS[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -U nimbus --auth=trust --encoding=UTF8 --locale=C --no-instructions \
      >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; echo "pg_start: initdb failed" >&2; return 1; }
    for line in "${conf[@]}"; do printf '%s\n' "$line" >>"$PG_DATA/postgresql.conf"; done
  fi
  "${PG_RUN_AS[@]}" "$PG_BIN/pg_ctl" start -w -t 60 -D "$PG_DATA" -l "$PG_SOCKET/postgres.log" \
    -o "-c listen_addresses='' -c unix_socket_directories='$PG_SOCKET'$opts" >/dev/null \
    || { tail -n 20 "$PG_SOCKET/postgres.log" >&2; echo "pg_start: PostgreSQL did not start (log above)" >&2; return 1; }
}

pg_stop() {
  local data=$1 mode=${2:-fast} secs=${3:-60} bin=${PG_BIN:-} pid i
  pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  if [ -z "$bin" ]; then bin=$(pg_find_bin && echo "$PG_BIN"); fi
  run_as_owner "$data" "$bin/pg_ctl" stop -D "$data" -m "$mode" -w -t "$secs" >/dev/null 2>&1 && return 0
  # pg_ctl failed: signal the postmaster by PID (only if that PID still is a postgres process).
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ] || return 0
  echo "pg_stop: pg_ctl stop -m $mode failed for $data; SIGQUIT to postmaster $pid" >&2
  kill -QUIT "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

start_test_postgres() {
  local dir=$1
  pg_start "$dir" max_connections=400 fsync=off synchronous_commit=off || return 1
  export NIMBUS_TEST_DATABASE_URL="$PG_URL"
  export NIMBUS_TEST_PG_BIN="$PG_BIN"
  export NIMBUS_TEST_PG_DATA="$PG_DATA"
  export NIMBUS_TEST_PG_SOCKET="$PG_SOCKET"
  export NIMBUS_TEST_PG_RUN_AS="${PG_RUN_AS[*]}"
  export NIMBUS_TEST_DIR="$dir"
}

stop_test_postgres() {
  [ -n "${NIMBUS_TEST_PG_DATA:-}" ] || return 0
  PG_BIN=${NIMBUS_TEST_PG_BIN:-} pg_stop "$NIMBUS_TEST_PG_DATA" immediate || true
  rm -rf "$NIMBUS_TEST_DIR"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    start)
      start_test_postgres "${2:?directory}"
      echo "export NIMBUS_TEST_DATABASE_URL='$NIMBUS_TEST_DATABASE_URL' NIMBUS_TEST_PG_BIN='$NIMBUS_TEST_PG_BIN' NIMBUS_TEST_PG_DATA='$NIMBUS_TEST_PG_DATA' NIMBUS_TEST_PG_SOCKET='$NIMBUS_TEST_PG_SOCKET' NIMBUS_TEST_PG_RUN_AS='$NIMBUS_TEST_PG_RUN_AS' NIMBUS_TEST_DIR='$NIMBUS_TEST_DIR'" ;;
    stop)
      dir=${2:?directory}
      pg_stop "$dir/pg/data" immediate || true
      rm -rf "$dir" ;;
    *) echo "usage: $0 start|stop DIR" >&2; exit 64 ;;
  esac
fi
