#!/usr/bin/env bash
# Helpers shared by the benchmark scripts (sourced, not run). Each script sets BENCH_NAME first
# and keeps its own cleanup; these read the script's globals (WORK, NIMBUS_PID, NIMBUS_BIN, PG_BIN,
# PG_DATA, SOCK, DB_URL) when called.

say() { printf '[%s %s] %s\n' "${BENCH_NAME:-bench}" "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }
stop_pid() {  # stop_pid PID SIGNAL SECONDS: signal, wait, then SIGKILL
  local pid=$1 sig=$2 secs=$3 i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill "-$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < secs * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    say "pid $pid did not stop after SIG$sig within ${secs}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
pg_pid() { [ -n "$PG_DATA" ] && [ -f "$PG_DATA/postmaster.pid" ] && head -1 "$PG_DATA/postmaster.pid" || true; }

# The scratch cluster of the scripts with a PostgreSQL of their own (assets, longpoll, prune,
# records): Tests/test-postgres.sh's pg_find_bin, pg_start and pg_stop.
source "$(dirname "${BASH_SOURCE[0]}")/../Tests/test-postgres.sh"
# Servers started by the tests and benches put their admin console on a free port (several run at once).
export NIMBUS_ADMIN_LISTEN=${NIMBUS_ADMIN_LISTEN:-127.0.0.1:0}
# start_bench_postgres [SETTING]...: a cluster in WORK/pg (socket SOCK, data PG_DATA) started with
# pg_start's SETTINGs (NAME=VALUE, --conf LINE, --opts RAW); sets PG_VERSION.
start_bench_postgres() {
  SOCK=$WORK/pg
  PG_DATA=$SOCK/data
  say "initdb in $PG_DATA"
  pg_start "$WORK" "$@" || die "PostgreSQL did not start"
  PG_VERSION=$("$PG_BIN/postgres" -V | awk '{print $3}')
}
# stop_bench_postgres: for the cleanup trap (pg_ctl stop -m fast; SIGQUIT to the postmaster if that fails).
stop_bench_postgres() { [ -z "$PG_DATA" ] || pg_stop "$PG_DATA" fast 60; }
# on_exit_stop STOP: when the script exits (INT and TERM exit 130), runs the function STOP (the
# script's own processes, stopped by PID), then stops the scratch cluster and removes WORK (kept
# with BENCH_KEEP); the script's exit status is kept.
on_exit_stop() {
  BENCH_STOP=$1
  trap bench_exit EXIT
  trap 'exit 130' INT TERM
}
bench_exit() {
  local rc=$?
  set +e
  "$BENCH_STOP"
  stop_bench_postgres
  if [ -n "${WORK:-}" ]; then
    if [ -n "${BENCH_KEEP:-}" ]; then say "kept $WORK"; else rm -rf -- "$WORK"; fi
  fi
  exit "$rc"
}
psql() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -U nimbus "$@"; }
# alive: dies with the log's tail when nimbus has exited (its log: NIMBUS_LOG, else $WORK/nimbus.log).
alive() { kill -0 "$NIMBUS_PID" 2>/dev/null || die "nimbus (pid $NIMBUS_PID) died; log tail:$(printf '\n'; tail -30 "${NIMBUS_LOG:-$WORK/nimbus.log}")"; }
proc_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk -v all="${2:-}" '{print $12 + $13 + (all ? $14 + $15 : 0)}' || echo 0; }
machine_busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
admin() { "$NIMBUS_BIN" "$@" --database-url "$DB_URL"; }
checkpoint() { psql -d postgres -c CHECKPOINT >/dev/null; }

# For the scripts that run `nimbus serve --data-dir` (embedded PostgreSQL) rather than a cluster of
# their own: bench/query.sh, bench/ratelimit.sh, bench/slowloris.sh.

# release_binary: NIMBUS_BIN is BENCH_NIMBUS_BIN, or the release build (built unless BENCH_SKIP_BUILD).
release_binary() {
  if [ -n "${BENCH_NIMBUS_BIN:-}" ]; then
    NIMBUS_BIN=$BENCH_NIMBUS_BIN
  else
    if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
      say "building nimbus (release)"
      swift build -c release --product nimbus >&2 || die "release build failed"
    fi
    NIMBUS_BIN="$(swift build -c release --show-bin-path)/nimbus"
  fi
  [ -x "$NIMBUS_BIN" ] || die "no nimbus binary at $NIMBUS_BIN"
}
# embedded_workdir: WORK, a temp dir the embedded PostgreSQL's unprivileged user can enter, and
# DATA, the server's data dir inside it.
embedded_workdir() {
  WORK=$(mktemp -d /tmp/nimbus-bench.XXXXXX)
  chmod 755 "$WORK"
  DATA=$WORK/data
  mkdir -p "$DATA"
}
# compile_c OUT SOURCE [FLAGS...]: the C load generator SOURCE, -O2, into OUT (CC, else cc, clang or
# gcc). The load generators' HTTP client is bench/httpclient.h, header-only: nothing else to compile.
compile_c() {
  local out=$1 source=$2 cc=${CC:-}
  shift 2
  [ -n "$cc" ] || cc=$(command -v cc || command -v clang || command -v gcc || true)
  [ -n "$cc" ] || die "no C compiler (cc, clang or gcc) to build $source"
  "$cc" -O2 -o "$out" "$source" "$@" || die "cannot compile $source"
}
# start_embedded_server ARGS...: nimbus serve on DATA, loopback, a free port, its log (stderr) in
# WORK/nimbus.log (started afresh); sets NIMBUS_PID and PORT once it listens.
start_embedded_server() {
  : >"$WORK/nimbus.log"
  "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --data-dir "$DATA" "$@" </dev/null 2>>"$WORK/nimbus.log" >&2 &
  NIMBUS_PID=$!
  PORT=""
  local i
  for ((i = 0; i < 1200; i++)); do
    PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$WORK/nimbus.log" 2>/dev/null | head -1 | sed 's/.*://' || true)
    [ -n "$PORT" ] && break
    kill -0 "$NIMBUS_PID" 2>/dev/null || die "nimbus exited; log tail:$(printf '\n'; tail -20 "$WORK/nimbus.log")"
    sleep 0.1
  done
  [ -n "$PORT" ] || die "nimbus did not listen within 120 s"
}
data_admin() { "$NIMBUS_BIN" "$@" --data-dir "$DATA"; }
# remove_embedded_cluster: the cluster a root-run server keeps outside DATA (for its unprivileged
# user), named in DATA/postgres-location; for the cleanup trap, after the server stopped.
remove_embedded_cluster() {
  [ -n "$DATA" ] && [ -f "$DATA/postgres-location" ] || return 0
  local location
  location=$(cat "$DATA/postgres-location")
  case "$location" in /var/lib/nimbus/clusters/?*) rm -rf -- "$location" ;; esac
}

# The throughput benchmarks drive one device token far beyond any real device's rate; the per-token
# limit (requestsPerSecondPerToken) is off for the servers they start unless set here explicitly.
# bench/ratelimit.sh, which measures that limit, unsets this.
export NIMBUS_REQUESTS_PER_SECOND_PER_TOKEN=${NIMBUS_REQUESTS_PER_SECOND_PER_TOKEN:-0}

# Smoke mode (Tests/run.sh runs every bench so, through bench/smoke.sh): a few seconds, tiny sizes,
# the binary of BENCH_NIMBUS_BIN (no build), the whole run bounded by a watchdog; a script exits
# non-zero when its pipeline did not work; its figures print but are not judged.
# smoke_mode LIMIT [KNOB=VALUE]... -- "$@": SMOKE=1 when an argument is --smoke or BENCH_SMOKE is
# set (any other argument: usage, exit 64); in smoke mode each KNOB not set already is exported
# with VALUE, BENCH_SKIP_BUILD is set when BENCH_NIMBUS_BIN is, and a watchdog ends the script
# after LIMIT seconds. Call it before the script reads its knobs.
SMOKE=${SMOKE:-${BENCH_SMOKE:-}}
smoke_mode() {
  local limit=$1 kv arg name
  local -a knobs=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do knobs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  for arg in "$@"; do
    case $arg in
      --smoke) SMOKE=1 ;;
      *) echo "usage: bash $0 [--smoke]   (knobs in the environment: see the script's header)" >&2; exit 64 ;;
    esac
  done
  [ -n "$SMOKE" ] || return 0
  for kv in "${knobs[@]}"; do
    name=${kv%%=*}
    [ -n "${!name+x}" ] || export "$kv"
  done
  [ -z "${BENCH_NIMBUS_BIN:-}" ] || export BENCH_SKIP_BUILD=1
  say "smoke mode: tiny sizes, bounded to ${limit}s; figures are printed, not judged"
  smoke_watchdog "$limit"
}
# smoke_watchdog LIMIT: after LIMIT seconds, SIGTERM to the script's children (a foreground command
# would hold off its trap), then to the script (its EXIT trap cleans up and it exits non-zero).
# The watchdog ends by itself when the script has exited.
smoke_watchdog() {
  local limit=$1 parent=$$
  (
    trap - EXIT INT TERM
    for ((i = 0; i < limit; i++)); do sleep 1; kill -0 "$parent" 2>/dev/null || exit 0; done
    printf '[%s] FAILED: smoke run over %ss; stopping it\n' "${BENCH_NAME:-bench}" "$limit" >&2
    kill -TERM "$parent" 2>/dev/null
    for p in $(cat "/proc/$parent/task/$parent/children" 2>/dev/null); do
      [ "$p" = "$BASHPID" ] || kill -TERM "$p" 2>/dev/null
    done
  ) &
}
