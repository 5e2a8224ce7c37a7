#!/usr/bin/env bash
# A scratch PostgreSQL cluster for the tests: Unix socket only, in a directory of its own.
#   source Tests/test-postgres.sh; start_test_postgres DIR   -> exports NIMBUS_TEST_* variables
#   stop_test_postgres                                        -> stops it and removes DIR
# Or from a shell: `bash Tests/test-postgres.sh start DIR` / `bash Tests/test-postgres.sh stop DIR`.
# Started as root, the cluster runs as an unprivileged user (initdb refuses root).

start_test_postgres() {
  local dir=$1
  local pg_bin=""
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do pg_bin=$candidate; break; done
  [ -n "$pg_bin" ] || { echo "test-postgres: PostgreSQL server programs not found" >&2; return 1; }
  mkdir -p "$dir/pg"
  chmod 755 "$dir"
  local run_as=""
  if [ "$(id -u)" -eq 0 ]; then
    local pg_user=postgres
    if ! id "$pg_user" >/dev/null 2>&1; then
      pg_user=nimbus
      id nimbus >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin nimbus
    fi
    chown "$pg_user" "$dir/pg"
    run_as="runuser -u $pg_user --"
  fi
  local data="$dir/pg/data"
  if [ ! -f "$data/PG_VERSION" ]; then
    $run_as "$pg_bin/initdb" -D "$data" -U nimbus --auth=trust --encoding=UTF8 --locale=C --no-instructions >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; return 1; }
  fi
  $run_as "$pg_bin/pg_ctl" start -w -D "$data" -l "$dir/pg/postgres.log" \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir/pg' -c max_connections=400 -c fsync=off -c synchronous_commit=off" >/dev/null \
    || { cat "$dir/pg/postgres.log" >&2; return 1; }
  export NIMBUS_TEST_DATABASE_URL="postgresql:///postgres?host=$dir/pg&user=nimbus"
  export NIMBUS_TEST_PG_BIN="$pg_bin"
  export NIMBUS_TEST_PG_DATA="$data"
  export NIMBUS_TEST_PG_SOCKET="$dir/pg"
  export NIMBUS_TEST_PG_RUN_AS="$run_as"
  export NIMBUS_TEST_DIR="$dir"
}

stop_test_postgres() {
  [ -n "${NIMBUS_TEST_PG_DATA:-}" ] || return 0
  $NIMBUS_TEST_PG_RUN_AS "$NIMBUS_TEST_PG_BIN/pg_ctl" stop -D "$NIMBUS_TEST_PG_DATA" -m immediate -w >/dev/null 2>&1 || true
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
      for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do pg_bin=$candidate; break; done
      run_as=""; [ "$(id -u)" -eq 0 ] && run_as="runuser -u $(stat -c %U "$dir/pg") --"
      $run_as "$pg_bin/pg_ctl" stop -D "$dir/pg/data" -m immediate -w >/dev/null 2>&1 || true
      rm -rf "$dir" ;;
    *) echo "usage: $0 start|stop DIR" >&2; exit 64 ;;
  esac
fi
