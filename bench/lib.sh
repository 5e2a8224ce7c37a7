#!/usr/bin/env bash
# Helpers shared by the benchmark scripts (sourced, not run). Each script sets BENCH_NAME first
# and keeps its own cleanup; these read the script's globals (WORK, NIMBUS_PID, NIMBUS_BIN, PG_BIN,
# PG_DATA, SOCK, DB_URL, RUN_AS) when called.

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
psql() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -U nimbus "$@"; }
alive() { kill -0 "$NIMBUS_PID" 2>/dev/null || die "nimbus (pid $NIMBUS_PID) died; log tail:$(printf '\n'; tail -30 "$WORK/nimbus.log")"; }
proc_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk -v all="${2:-}" '{print $12 + $13 + (all ? $14 + $15 : 0)}' || echo 0; }
machine_busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
admin() { "$NIMBUS_BIN" "$@" --database-url "$DB_URL"; }
checkpoint() { psql -d postgres -c CHECKPOINT >/dev/null; }

# The throughput benchmarks drive one device token far beyond any real device's rate; the per-token
# limit (requestsPerSecondPerToken) is off for the servers they start unless set here explicitly.
# bench/ratelimit.sh, which measures that limit, unsets this.
export NIMBUS_REQUESTS_PER_SECOND_PER_TOKEN=${NIMBUS_REQUESTS_PER_SECOND_PER_TOKEN:-0}
