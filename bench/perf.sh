#!/usr/bin/env bash
# Where Nimbus's CPU goes under load (issue #18, item 2): `perf record` (software clock: no
# hardware counters needed, so it works in VMs and containers) of nimbus while bench/recload.c
# drives one workload, and the top entries by self time, for one binary or two side by side.
#
#   bash bench/perf.sh                                   # the release build of the work tree
#   BENCH_COMPARE=/tmp/nimbus-old bash bench/perf.sh     # that binary first, then the work tree's
#
# 1. Installs linux-perf and PostgreSQL's programs (deploy/install-deps.sh), builds nimbus (release).
# 2. One scratch PostgreSQL cluster (fsync on); per binary a fresh database and `nimbus serve
#    --database-url`, a user, a token and the zones.
# 3. Per workload: a short warm-up, then BENCH_SECONDS of load from BENCH_CLIENTS keep-alive clients
#    while `perf record -e cpu-clock -F 1999 -p <nimbus>` samples every nimbus thread:
#      one     records/modify, 1 create per request (~300-byte AppEvent), 1 zone
#      batch   records/modify, 100 creates per request, 8 zones
#      changes records/changes, pages of 200 through a zone of 20,000 records
#    then `perf report --no-children --sort dso,symbol`: the top BENCH_TOP entries (Swift names
#    demangled), and the requests the load generator completed.
# Timings depend on what else the machine runs; the shares of the top entries much less so.
# bench/callgrind.sh counts instructions, which do not depend on it at all.
#
# Knobs: BENCH_SECONDS=8 BENCH_CLIENTS=16 BENCH_TOP=20 BENCH_WORKLOADS="one batch changes"
#   BENCH_FEED_RECORDS=20000 BENCH_NIMBUS_BIN BENCH_COMPARE BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1 BENCH_KEEP=1
# Loopback only; every load run is bounded in time; everything started is stopped by PID.
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_SECONDS=1 BENCH_CLIENTS=2 BENCH_TOP=5 BENCH_FEED_RECORDS=400), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 90 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=perf
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 90 BENCH_SECONDS=1 BENCH_CLIENTS=2 BENCH_TOP=5 BENCH_FEED_RECORDS=400 -- "$@"

SECS=${BENCH_SECONDS:-8}
CLIENTS=${BENCH_CLIENTS:-16}
TOP=${BENCH_TOP:-20}
WORKLOADS=${BENCH_WORKLOADS:-one batch changes}
CONTAINER=iCloud.bench.Perf
FEED_RECORDS=${BENCH_FEED_RECORDS:-20000}

WORK="" NIMBUS_PID="" PG_BIN="" PG_DATA=""
stop_own_processes() {
  stop_pid "$NIMBUS_PID" TERM 30
}
on_exit_stop stop_own_processes

[ -n "${BENCH_SKIP_INSTALL:-}" ] || bash deploy/install-deps.sh linux-perf
command -v perf >/dev/null || die "perf is not installed (linux-perf)"
pg_find_bin || die "PostgreSQL server programs not found (deploy/install-deps.sh)"
release_binary
BINARIES=("$NIMBUS_BIN") LABELS=(new)
if [ -n "${BENCH_COMPARE:-}" ]; then
  [ -x "$BENCH_COMPARE" ] || die "BENCH_COMPARE=$BENCH_COMPARE is not an executable"
  BINARIES=("$BENCH_COMPARE" "$NIMBUS_BIN") LABELS=(old new)
fi
DEMANGLE=(cat)
swift demangle --help >/dev/null 2>&1 && DEMANGLE=(swift demangle --simplified)

WORK=$(mktemp -d /tmp/nimbus-perf.XXXXXX)
chmod 755 "$WORK"
compile_c "$WORK/recload" bench/recload.c -pthread
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
start_bench_postgres max_connections=100 fsync=on synchronous_commit=on

recload() { "$WORK/recload" "$@" 2>"$WORK/recload.err" || die "recload failed: $(head -3 "$WORK/recload.err")"; }
field() { local pair; for pair in $1; do [ "${pair%%=*}" != "$2" ] || { echo "${pair#*=}"; return; }; done; }

for b in "${!BINARIES[@]}"; do
  bin=${BINARIES[$b]} label=${LABELS[$b]}
  db=nimbus_$label
  psql -d postgres -c "CREATE DATABASE $db" >/dev/null
  DB_URL="postgresql:///$db?host=$SOCK&user=nimbus"
  : >"$WORK/nimbus.log"
  "$bin" serve --listen 127.0.0.1:0 --database-url "$DB_URL" --data-dir "$WORK/data-$label" --admin-listen off \
    --requests-per-second-per-token 0 --prune-interval 0s </dev/null 2>"$WORK/nimbus.log" &
  NIMBUS_PID=$!
  PORT=""
  for ((i = 0; i < 600; i++)); do
    PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$WORK/nimbus.log" 2>/dev/null | head -1 | sed 's/.*://' || true)
    [ -n "$PORT" ] && break
    alive; sleep 0.1
  done
  [ -n "$PORT" ] || die "nimbus did not listen within 60 s"
  PATH_BASE=/database/1/$CONTAINER/development/private
  "$bin" user add bench --database-url "$DB_URL" >/dev/null 2>&1 || die "nimbus user add failed"
  TOKEN=$("$bin" token issue bench --device perf --database-url "$DB_URL" 2>&1 | awk '/^token:/ {print $2}')
  [ -n "$TOKEN" ] || die "no token"
  zones="one feed $(seq -f 'b%g' 0 7 | paste -sd' ')"
  ops=""
  for z in $zones; do ops+="${ops:+,}{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"$z\"}}}"; done
  curl -sS --max-time 60 -o /dev/null -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    --data "{\"operations\":[$ops]}" "http://127.0.0.1:$PORT$PATH_BASE/zones/modify" || die "zones/modify failed"
  recload modify 127.0.0.1 "$PORT" "$PATH_BASE/records/modify" "$TOKEN" 4 120 100 feed feed "$FEED_RECORDS" >/dev/null
  for w in $WORKLOADS; do
    modify=(modify 127.0.0.1 "$PORT" "$PATH_BASE/records/modify" "$TOKEN" "$CLIENTS")
    case $w in
      one) run() { recload "${modify[@]}" "$1" 1 one "$w-$label-$2"; } ;;
      batch) run() { recload "${modify[@]}" "$1" 100 "$(seq -f 'b%g' 0 7 | paste -sd,)" "$w-$label-$2"; } ;;
      changes) run() { recload changes 127.0.0.1 "$PORT" "$PATH_BASE/records/changes" "$TOKEN" "$CLIENTS" "$1" feed 200; } ;;
      *) die "unknown workload $w" ;;
    esac
    run 2 warm >/dev/null
    perf record -e cpu-clock -F 1999 -g -p "$NIMBUS_PID" -o "$WORK/$label-$w.data" -- sleep "$SECS" >/dev/null 2>&1 &
    perf_pid=$!
    line=$(run "$SECS" measured)
    wait "$perf_pid" || true
    echo "$label $w requests/s $(field "$line" req_per_s) records/s $(field "$line" records_per_s) p99_ms $(field "$line" p99_ms)" >>"$WORK/summary"
    # (sed -n, not head: nothing in the pipe stops reading early, which pipefail would report)
    perf report -i "$WORK/$label-$w.data" --stdio --no-children --sort dso,symbol 2>/dev/null \
      | grep -E '^ +[0-9.]+%' | sed -n "1,${TOP}p" | "${DEMANGLE[@]}" | cut -c1-150 >"$WORK/$label-$w.top"
    say "$label $w: $(tail -1 "$WORK/summary")"
  done
  stop_pid "$NIMBUS_PID" TERM 30
  NIMBUS_PID=""
done

echo
echo "================ Nimbus under perf (cpu-clock, every nimbus thread) ================"
echo "binaries: ${BINARIES[*]}; $CLIENTS clients, $SECS s per workload"
cat "$WORK/summary"
for w in $WORKLOADS; do
  for l in "${LABELS[@]}"; do
    echo "---- $l $w: top $TOP by self time (dso, symbol) ----"
    cat "$WORK/$l-$w.top"
  done
done
