#!/usr/bin/env bash
# Record-store benchmark: Nimbus's records/modify and records/changes over HTTP against the same
# work done directly in PostgreSQL by pgbench (bench/reference/*.sql, the physical reference of the
# issue's "Figures for the closing note"), side by side in one run, on ONE PostgreSQL cluster.
#
#   bash bench/records.sh
#
# 1. Installs what it needs (deploy/install-deps.sh: PostgreSQL server programs, pgbench, curl, python3)
#    and builds nimbus in release mode.
# 2. Starts one scratch PostgreSQL cluster (Unix socket only, temp dir) with the embedded cluster's
#    settings and default durability (fsync on, synchronous_commit on); database `bench` gets
#    reference/schema.sql + preload.sql (1M rows) for pgbench, database `nimbus` serves
#    `nimbus serve --database-url` (release build). A user, a device token and zones are created.
# 3. Workloads (each run BENCH_SECONDS long, CHECKPOINT before every run, rounds interleaved as
#    nimbus, pgbench…, pgbench… (reversed), nimbus; figures are medians over rounds):
#    one     records/modify, 1 record per request, BENCH_CLIENTS keep-alive clients, 1 zone
#            vs zone_cte.sql -D nzones=1 (BENCH_PG_CLIENTS) and zone_txn.sql (BENCH_TXN_CLIENTS)
#    many    the same spread over 32 zones of one user  vs  the same scripts with -D nzones=32
#    batch   records/modify, 100 records per request, over BENCH_BATCH_ZONES zones  vs  upsert100.sql
#            (BENCH_PG_CLIENTS_BULK, default 8 as in reference/README.md; the same for changes.sql)
#    changes a zone preloaded with BENCH_PRELOAD records through records/modify (100 per request;
#            the rate is reported), then BENCH_CLIENTS readers page through it with resultsLimit
#            200, each from no token, following syncToken while moreComing  vs  changes.sql
#    Nimbus records are ~300-byte AppEvent records with unique names (`create`), like the
#    reference's, in NimbusKit's shape (each record names its zoneID, as NimbusKit, NimbusKitCK and
#    the examples write them). The load generator is bench/recload.c (C, one thread per client).
#    Shape pairs (issue #28, BENCH_SHAPES=1): beside each Nimbus run of one, many and batch, the
#    same run in the bare shape the benches sent before (RECLOAD_SHAPE=bare: no zoneID per record),
#    adjacent and in alternating order; the summary gives NimbusKit's shape ÷ the bare shape, the
#    median of the rounds' pairs (target >= 0.95), and the CPU per record of each.
#    The equal-work reference (bench/equalwork.sh, bench/equalwork.py; issue #18): before each
#    workload's rounds, a short extra Nimbus run (BENCH_WARMUP s, after 1 s priming the zones)
#    with pg_stat_statements and 10% of the executions logged with their parameters; pgbench
#    scripts replay every statement Nimbus ran (>= 1% of the calls) with its text verbatim and
#    the logged parameters' shapes and sizes (unique record names, random zones, the mean batch
#    size), weighted by calls, -M prepared, against database nimbus_eq: a pg_dump copy of
#    Nimbus's database taken after the warm-up (records of the feed zone copied in for changes).
#    It runs in every round beside the simple references, with pgbench -c for each of
#    BENCH_EQ_CLIENTS (default: Nimbus's client count, 2 and 1); the fastest is the reference.
#    The summary reports Nimbus ÷ that reference (target >= 0.7) and CPU µs per record of Nimbus,
#    of its PostgreSQL, their ratio (target <= 0.5), and of the replay's PostgreSQL; the
#    simple-table figures follow as information.
# 4. Statements per request with their execution and planning time (pg_stat_statements, short
#    extra runs), CPU used by nimbus, PostgreSQL, the client and everything else during every run,
#    server CPU per record (independent of other load on the shared machine), and a summary with
#    the equal-work table, then Nimbus ÷ pgbench for each simple reference (information).
# bench/reference/ holds the reference schema, preload and pgbench scripts.
#
# Knobs (environment): BENCH_SECONDS=10 BENCH_ROUNDS=2 BENCH_CLIENTS=16 BENCH_PG_CLIENTS="8 16" BENCH_PG_CLIENTS_BULK=8
#   BENCH_TXN_CLIENTS=8 BENCH_EQ_CLIENTS="16 2 1" BENCH_BATCH=100 BENCH_BATCH_ZONES=32 BENCH_PRELOAD=100000 BENCH_WARMUP=3
#   BENCH_WORKLOADS="one many batch changes" BENCH_STATEMENTS=1 (0: skip the statement count) BENCH_SHAPES=1 (0: no bare-shape runs)
#   BENCH_REFERENCES=1 (0: Nimbus's runs only, no pgbench or equal-work replay: for the shape pairs alone)
#   BENCH_POOL_SIZE= BENCH_EVENT_LOOPS= BENCH_WRITE_BATCHES= (nimbus defaults) BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1
#   BENCH_KEEP=1 (keep the temp dir and leave nothing running) BENCH_NIMBUS_BIN=path (measure that binary, no build)
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_SECONDS=1 BENCH_ROUNDS=1 BENCH_CLIENTS=2 BENCH_PG_CLIENTS=2 BENCH_PG_CLIENTS_BULK=2 BENCH_TXN_CLIENTS=2 BENCH_EQ_CLIENTS=2 BENCH_BATCH=10 BENCH_BATCH_ZONES=2 BENCH_PRELOAD=400 BENCH_WARMUP=1 EQ_LOG_SAMPLE=1 (every execution logged: a 1 s capture under load once sampled none of 29 calls) BENCH_STATEMENTS=0 BENCH_WORKLOADS="one batch changes"), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 150 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=records
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 150 BENCH_SECONDS=1 BENCH_ROUNDS=1 BENCH_CLIENTS=2 BENCH_PG_CLIENTS=2 BENCH_PG_CLIENTS_BULK=2 BENCH_TXN_CLIENTS=2 BENCH_EQ_CLIENTS=2 BENCH_BATCH=10 BENCH_BATCH_ZONES=2 BENCH_PRELOAD=400 BENCH_WARMUP=1 EQ_LOG_SAMPLE=1 BENCH_STATEMENTS=0 BENCH_WORKLOADS="one batch changes" -- "$@"
ROOT=$PWD

SECS=${BENCH_SECONDS:-10}
ROUNDS=${BENCH_ROUNDS:-2}
CLIENTS=${BENCH_CLIENTS:-16}
PG_CLIENTS=${BENCH_PG_CLIENTS:-8 16}
PG_CLIENTS_BULK=${BENCH_PG_CLIENTS_BULK:-8}
EQ_CLIENTS=${BENCH_EQ_CLIENTS:-$CLIENTS 2 1}
TXN_CLIENTS=${BENCH_TXN_CLIENTS:-8}
BATCH=${BENCH_BATCH:-100}
BATCH_ZONES=${BENCH_BATCH_ZONES:-32}
PRELOAD=${BENCH_PRELOAD:-100000}
WARMUP=${BENCH_WARMUP:-3}
WORKLOADS=${BENCH_WORKLOADS:-one many batch changes}
STATEMENTS=${BENCH_STATEMENTS:-1}
SHAPES=${BENCH_SHAPES:-1}
REFERENCES=${BENCH_REFERENCES:-1}
SHAPE_TARGET=0.95
POOL_SIZE=${BENCH_POOL_SIZE:-}
WRITE_BATCHES=${BENCH_WRITE_BATCHES:-}
EVENT_LOOPS=${BENCH_EVENT_LOOPS:-}
REF=${BENCH_REFERENCE_DIR:-$ROOT/bench/reference}
CONTAINER=iCloud.bench.Records
TARGET=0.7

source bench/equalwork.sh  # the equal-work reference: eq_* functions
T0=$(date +%s)

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" NIMBUS_PID="" PG_BIN="" PG_DATA=""
stop_own_processes() {
  stop_pid "$NIMBUS_PID" TERM 30
}
on_exit_stop stop_own_processes

# ---------------------------------------------------------------- 1. dependencies and build
if [ -z "${BENCH_SKIP_INSTALL:-}" ]; then
  # python3: bench/equalwork.py writes the equal-work replay scripts.
  bash deploy/install-deps.sh python3
fi
pg_find_bin || die "PostgreSQL server programs not found (deploy/install-deps.sh)"
PGBENCH=$PG_BIN/pgbench; [ -x "$PGBENCH" ] || PGBENCH=$(find_tool pgbench || true)
[ -n "$PGBENCH" ] && [ -x "$PGBENCH" ] || die "pgbench not found"
command -v curl >/dev/null || die "curl is not installed"
for f in schema.sql preload.sql zone_cte.sql zone_txn.sql upsert100.sql changes.sql; do
  [ -f "$REF/$f" ] || die "reference script $REF/$f is missing"
done

if [ -n "${BENCH_NIMBUS_BIN:-}" ]; then
  NIMBUS_BIN=$BENCH_NIMBUS_BIN
  rev="binary $NIMBUS_BIN of $(date -r "$NIMBUS_BIN" '+%F %T')"
else
  if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
    say "building nimbus (release)"
    swift build -c release --product nimbus >&2 || die "release build failed (swift build -c release --product nimbus)"
  fi
  NIMBUS_BIN="$(swift build -c release --show-bin-path)/nimbus"
  rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
  [ -z "$(git -C "$ROOT" status --porcelain -- Sources Package.swift migrations 2>/dev/null)" ] || rev+=" + uncommitted changes in Sources/migrations"
  rev+=", binary of $(date -r "$NIMBUS_BIN" '+%F %T')"
  [ -n "${BENCH_SKIP_BUILD:-}" ] && rev+=" (build skipped)"
fi
[ -x "$NIMBUS_BIN" ] || die "no nimbus binary at $NIMBUS_BIN"

WORK=$(mktemp -d /tmp/nimbus-records-bench.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/runs"
compile_c "$WORK/recload" bench/recload.c -pthread
RECLOAD=$WORK/recload
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# ---------------------------------------------------------------- 2. PostgreSQL, databases, nimbus
# The embedded cluster's settings (EmbeddedCluster.swift) with durability spelled out; the
# statement counter is loaded but off (track=none) until the statement-count phase.
pg_settings=(max_connections=200 fsync=on synchronous_commit=on)
HAVE_PGSS=""
if [ -f "$PG_BIN/../lib/pg_stat_statements.so" ]; then
  # track in the config file, not on the command line, so that ALTER SYSTEM can turn it on later.
  pg_settings+=(shared_preload_libraries=pg_stat_statements --conf "pg_stat_statements.track = none")
  HAVE_PGSS=1
fi
start_bench_postgres "${pg_settings[@]}"
psql -d postgres -c 'CREATE DATABASE bench' -c 'CREATE DATABASE nimbus' >/dev/null
PG_SETTINGS=$(psql -d postgres -At -F= -c "SELECT name, setting FROM pg_settings WHERE name IN
  ('fsync','synchronous_commit','shared_buffers','wal_level','max_wal_size','full_page_writes','max_connections') ORDER BY name" | paste -sd' ')

say "loading the reference schema and preload (1M rows) into db bench"
t=$(date +%s.%N)
psql -d bench -f "$REF/schema.sql" >/dev/null 2>"$WORK/schema.err" || { cat "$WORK/schema.err" >&2; die "schema.sql failed"; }
preload_sql=$REF/preload.sql
if [ -n "$SMOKE" ]; then  # 10,000 rows instead of 1M: 10 records per user and zone
  sed 's/generate_series(1,1000) r/generate_series(1,10) r/' "$REF/preload.sql" >"$WORK/preload.sql"
  preload_sql=$WORK/preload.sql
fi
psql -d bench -f "$preload_sql" >/dev/null || die "preload.sql failed"
preload_sql_secs=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
say "preload.sql took ${preload_sql_secs}s"

DB_URL="postgresql:///nimbus?host=$SOCK&user=nimbus"
mkdir -p "$WORK/nimbus-data"
say "starting nimbus serve --database-url (db nimbus on the same cluster)"
"$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url "$DB_URL" --data-dir "$WORK/nimbus-data" --requests-per-second-per-token 0 \
  ${POOL_SIZE:+--pool-size "$POOL_SIZE"} ${EVENT_LOOPS:+--event-loops "$EVENT_LOOPS"} ${WRITE_BATCHES:+--write-batches "$WRITE_BATCHES"} </dev/null 2>"$WORK/nimbus.log" &
NIMBUS_PID=$!
PORT=""
for ((i = 0; i < 1200; i++)); do
  PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$WORK/nimbus.log" 2>/dev/null | head -1 | sed 's/.*://' || true)
  [ -n "$PORT" ] && break
  alive; sleep 0.1
done
[ -n "$PORT" ] || die "nimbus did not print 'listening on' within 120 s; log tail:$(printf '\n'; tail -30 "$WORK/nimbus.log")"
say "nimbus pid $NIMBUS_PID on port $PORT"
BASE=http://127.0.0.1:$PORT/database/1/$CONTAINER/development/private
"$NIMBUS_BIN" user add bench --database-url "$DB_URL" >"$WORK/user.out" 2>&1 || { cat "$WORK/user.out" >&2; die "nimbus user add failed"; }
"$NIMBUS_BIN" token issue bench --device bench-loadgen --database-url "$DB_URL" >"$WORK/token.out" 2>&1 \
  || { cat "$WORK/token.out" >&2; die "nimbus token issue failed"; }
TOKEN=$(awk '/^token:/ {print $2}' "$WORK/token.out")
[ -n "$TOKEN" ] || die "no 'token:' line from nimbus token issue: $(cat "$WORK/token.out")"

ONE_ZONES=one
MANY_ZONES=$(seq -f 'm%g' 0 31 | paste -sd,)
BATCH_ZONE_LIST=$(seq -f 'b%g' 0 $((BATCH_ZONES - 1)) | paste -sd,)
FEED_ZONE=feed
ops=""
for z in warm $ONE_ZONES ${MANY_ZONES//,/ } ${BATCH_ZONE_LIST//,/ } $FEED_ZONE; do
  ops+="${ops:+,}{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"$z\"}}}"
done
code=$(curl -sS -o "$WORK/zones.json" -w '%{http_code}' --max-time 30 -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' --data "{\"operations\":[$ops]}" "$BASE/zones/modify") || die "zones/modify failed"
[ "$code" = 200 ] || die "zones/modify: HTTP $code $(head -c 300 "$WORK/zones.json")"
! grep -q serverErrorCode "$WORK/zones.json" || die "zones/modify item errors: $(head -c 300 "$WORK/zones.json")"

# ---------------------------------------------------------------- measurement helpers
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
nimbus_ticks() { proc_ticks "$NIMBUS_PID"; }
# PostgreSQL: the postmaster with its reaped children (exited backends) plus the live children.
pg_ticks() {
  local pm t c
  pm=$(pg_pid); [ -n "$pm" ] || { echo 0; return; }
  t=$(proc_ticks "$pm" all)
  for c in $(cat /proc/"$pm"/task/*/children 2>/dev/null); do t=$((t + $(proc_ticks "$c"))); done
  echo "$t"
}
# CPU seconds of this shell's waited-for children (recload, pgbench): `times` must run in this
# shell itself (not in $(...)), so callers run `times >"$WORK/times"` first, then this.
children_cpu_s() {
  tail -1 "$WORK/times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%.3f", t }'
}

RESULTS=$WORK/results   # one line per run, see record_run
: >"$RESULTS"
# record_run WORKLOAD VARIANT ROUND RATE RATE2 P50 P99 P999 MAX REQUESTS NON200 S5XX ITEMERR SOCKERR FAILED  (+ CPU from globals)
record_run() {
  local cores
  cores=$(awk -v n="$c_nimbus" -v p="$c_pg" -v c="$c_client" -v b="$c_busy" -v w="$c_wall" -v hz="$CLK_TCK" 'BEGIN {
    o = b / hz - n / hz - p / hz - c; if (o < 0) o = 0
    printf "%.3f %.3f %.3f %.3f", n / hz / w, p / hz / w, c / w, o / w }')
  echo "$* $cores $(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS"
}
pg_children() { local pm; pm=$(pg_pid); [ -n "$pm" ] || { echo 0; return; }; { cat /proc/"$pm"/task/*/children 2>/dev/null || true; } | wc -w; }
measure_start() {
  alive; checkpoint; c_kids0=$(pg_children); c_n0=$(nimbus_ticks); c_p0=$(pg_ticks); c_b0=$(machine_busy)
  times >"$WORK/times"; c_c0=$(children_cpu_s); c_t0=$(date +%s.%N)
}
measure_end() {  # measure_end [pgbench]
  local i
  times >"$WORK/times"
  c_busy=$(( $(machine_busy) - c_b0 )); c_wall=$(awk -v a="$c_t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  # A finished pgbench's backends exit on their own; their CPU reaches the postmaster's cutime only
  # once it has reaped them, so wait (at most 2 s) for the children to return to their count before.
  if [ "${1:-}" = pgbench ]; then
    for ((i = 0; i < 40; i++)); do [ "$(pg_children)" -le "$c_kids0" ] && break; sleep 0.05; done
  fi
  c_nimbus=$(( $(nimbus_ticks) - c_n0 )); c_pg=$(( $(pg_ticks) - c_p0 ))
  c_client=$(awk -v a="$c_c0" -v b="$(children_cpu_s)" 'BEGIN {print b - a}')
}
kv() { tr ' ' '\n' <"$1" | awk -F= -v k="$2" '$1 == k {print $2; exit}'; }

NAME_SEQ=0
# nimbus_modify WORKLOAD ROUND BATCH ZONES [SECONDS]; VARIANT=bare: the bare shape (RECLOAD_SHAPE=bare)
nimbus_modify() {
  local w=$1 r=$2 b=$3 zs=$4 s=${5:-$SECS} f v=${VARIANT:-nimbus}
  NAME_SEQ=$((NAME_SEQ + 1)); f=$WORK/runs/$w-$v-$r.txt
  measure_start
  RECLOAD_SHAPE=$([ "$v" = bare ] && echo bare || echo nimbuskit) "$RECLOAD" modify 127.0.0.1 "$PORT" "/database/1/$CONTAINER/development/private/records/modify" "$TOKEN" \
    "$CLIENTS" "$s" "$b" "$zs" "r$NAME_SEQ-$w" >"$f" 2>"$f.err" || say "recload exited $? ($w round $r)"
  measure_end; alive
  [ -n "$(kv "$f" records_per_s)" ] || { cat "$f.err" >&2; die "no output from recload ($w round $r)"; }
  record_run "$w" "$v" "$r" "$(kv "$f" records_per_s)" "$(kv "$f" req_per_s)" "$(kv "$f" p50_ms)" "$(kv "$f" p99_ms)" \
    "$(kv "$f" p999_ms)" "$(kv "$f" max_ms)" "$(kv "$f" requests)" "$(kv "$f" non200)" "$(kv "$f" status_5xx)" \
    "$(kv "$f" item_errors)" "$(kv "$f" sockerr)" 0
  say "  $w $v round $r: $(kv "$f" records_per_s) records/s ($(kv "$f" req_per_s) req/s), p50 $(kv "$f" p50_ms) ms," \
      "p99 $(kv "$f" p99_ms) ms, max $(kv "$f" max_ms) ms; non-200 $(kv "$f" non200), item errors $(kv "$f" item_errors)," \
      "socket errors $(kv "$f" sockerr); cores nimbus/pg/client/other $(tail -1 "$RESULTS" | awk '{print $16 "/" $17 "/" $18 "/" $19}')"
  [ -s "$f.err" ] && say "  recload stderr: $(head -3 "$f.err" | cut -c1-300 | tr '\n' ' ')"
  return 0
}
# nimbus_changes ROUND
nimbus_changes() {
  local r=$1 f=$WORK/runs/changes-nimbus-$1.txt
  measure_start
  "$RECLOAD" changes 127.0.0.1 "$PORT" "/database/1/$CONTAINER/development/private/records/changes" "$TOKEN" \
    "$CLIENTS" "$SECS" "$FEED_ZONE" 200 >"$f" 2>"$f.err" || say "recload exited $? (changes round $r)"
  measure_end; alive
  [ -n "$(kv "$f" pages)" ] || { cat "$f.err" >&2; die "no output from recload (changes round $r)"; }
  local pages_s
  pages_s=$(awk -v p="$(kv "$f" pages)" -v s="$(kv "$f" secs)" 'BEGIN {printf "%.1f", p / s}')
  record_run changes nimbus "$r" "$(kv "$f" records_per_s)" "$pages_s" "$(kv "$f" p50_ms)" "$(kv "$f" p99_ms)" \
    "$(kv "$f" p999_ms)" "$(kv "$f" max_ms)" "$(kv "$f" requests)" "$(kv "$f" non200)" "$(kv "$f" status_5xx)" 0 "$(kv "$f" sockerr)" 0
  say "  changes nimbus round $r: $pages_s pages/s, $(kv "$f" records_per_s) records/s, p50 $(kv "$f" p50_ms) ms," \
      "p99 $(kv "$f" p99_ms) ms; passes completed $(kv "$f" restarts); non-200 $(kv "$f" non200), socket errors $(kv "$f" sockerr);" \
      "cores nimbus/pg/client/other $(tail -1 "$RESULTS" | awk '{print $16 "/" $17 "/" $18 "/" $19}')"
  [ -s "$f.err" ] && say "  recload stderr: $(head -3 "$f.err" | cut -c1-300 | tr '\n' ' ')"
  return 0
}
# pgbench_run WORKLOAD VARIANT ROUND SCRIPT CLIENTS RECORDS_PER_TX [pgbench -D args...]
pgbench_run() {
  local w=$1 v=$2 r=$3 script=$4 c=$5 per=$6 f j
  shift 6
  f=$WORK/runs/$w-$v-$r.txt
  j=$((c < 2 ? c : 2))
  measure_start
  PGOPTIONS="-c synchronous_commit=on" "$PGBENCH" -n -M prepared -c "$c" -j "$j" -T "$SECS" "$@" -f "$REF/$script" \
    -h "$SOCK" -U nimbus bench >"$f" 2>&1 || say "pgbench exited $? ($w $v round $r): $(tail -3 "$f" | tr '\n' ' ')"
  measure_end pgbench
  local tps lat n failed
  tps=$(awk '/^tps = / {print $3; exit}' "$f")
  [ -n "$tps" ] || { cat "$f" >&2; die "could not parse pgbench output ($w $v round $r)"; }
  lat=$(awk '/^latency average = / {print $4; exit}' "$f")
  n=$(awk -F': ' '/^number of transactions actually processed/ {print $2; exit}' "$f")
  failed=$(awk -F': ' '/^number of failed transactions/ {split($2, a, " "); print a[1]; exit}' "$f")
  record_run "$w" "$v" "$r" "$(awk -v t="$tps" -v p="$per" 'BEGIN {printf "%.1f", t * p}')" "$tps" "${lat:-0}" 0 0 0 \
    "${n:-0}" 0 0 0 0 "${failed:-0}"
  say "  $w pgbench $v round $r: $(awk -v t="$tps" -v p="$per" 'BEGIN {printf "%.1f", t * p}') records/s ($tps tx/s)," \
      "latency avg ${lat:-?} ms, failed ${failed:-0}; cores nimbus/pg/client/other $(tail -1 "$RESULTS" | awk '{print $16 "/" $17 "/" $18 "/" $19}')"
}

# The pgbench variants of a workload: "VARIANT SCRIPT CLIENTS RECORDS_PER_TX -D..." per line.
pg_variants() {
  local c
  case $1 in
    one|many)
      local nz=1; [ "$1" = many ] && nz=32
      for c in $PG_CLIENTS; do echo "cte-c$c zone_cte.sql $c 1 -D nzones=$nz"; done
      for c in $TXN_CLIENTS; do echo "txn-c$c zone_txn.sql $c 1 -D nzones=$nz"; done ;;
    batch) for c in $PG_CLIENTS_BULK; do echo "upsert100-c$c upsert100.sql $c 100"; done ;;
    changes) for c in $PG_CLIENTS_BULK; do echo "changes-c$c changes.sql $c 200"; done ;;
  esac
}
run_nimbus_side() {
  case $1 in
    one) shape_pair nimbus_modify one "$2" 1 "$ONE_ZONES" ;;
    many) shape_pair nimbus_modify many "$2" 1 "$MANY_ZONES" ;;
    batch) shape_pair nimbus_modify batch "$2" "$BATCH" "$BATCH_ZONE_LIST" ;;
    changes) nimbus_changes "$2" ;;
  esac
}
# shape_pair COMMAND WORKLOAD ROUND ...: the run in NimbusKit's shape and, with BENCH_SHAPES=1, the
# same run in the bare shape beside it: NimbusKit's first in odd rounds, the bare one first in even.
shape_pair() {
  local command=$1 r=$3
  shift
  if [ "$SHAPES" != 1 ]; then "$command" "$@"; return; fi
  if ((r % 2 == 1)); then
    "$command" "$@"; VARIANT=bare "$command" "$@"
  else
    VARIANT=bare "$command" "$@"; "$command" "$@"
  fi
}
run_workload() {
  local w=$1 r line i
  local -a variants
  mapfile -t variants < <(pg_variants "$w")
  say "workload $w: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  [ -z "$HAVE_PGSS" ] || [ "$REFERENCES" != 1 ] || eq_prepare "$w"
  for ((r = 1; r <= ROUNDS; r++)); do
    if [ "$REFERENCES" != 1 ]; then run_nimbus_side "$w" "$r"; continue; fi
    if ((r % 2 == 1)); then
      run_nimbus_side "$w" "$r"
      if eq_ready "$w"; then for c in $EQ_CLIENTS; do eq_run "$w" "$r" "$c"; done; fi
      for line in "${variants[@]}"; do pgbench_run "$w" $(echo "$line" | cut -d' ' -f1) "$r" $(echo "$line" | cut -d' ' -f2-); done
    else
      for ((i = ${#variants[@]} - 1; i >= 0; i--)); do
        line=${variants[$i]}; pgbench_run "$w" $(echo "$line" | cut -d' ' -f1) "$r" $(echo "$line" | cut -d' ' -f2-)
      done
      if eq_ready "$w"; then for c in $(echo $EQ_CLIENTS | tr ' ' '\n' | tac); do eq_run "$w" "$r" "$c"; done; fi
      run_nimbus_side "$w" "$r"
    fi
  done
}

# ---------------------------------------------------------------- 3. runs
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
say "load average before: $load_before"
say "warm-up: ${WARMUP}s of 1-record creates into zone warm (also defines the AppEvent schema)"
nimbus_modify warmup 0 1 warm "$WARMUP"

preload_rate="" preload_secs="" preload_line=""
for w in $WORKLOADS; do
  case $w in
    one|many|batch) run_workload "$w" ;;
    changes)
      say "preloading zone $FEED_ZONE with $PRELOAD records through records/modify ($BATCH per request, $CLIENTS clients)"
      f=$WORK/runs/preload.txt
      measure_start
      "$RECLOAD" modify 127.0.0.1 "$PORT" "/database/1/$CONTAINER/development/private/records/modify" "$TOKEN" \
        "$CLIENTS" 600 "$BATCH" "$FEED_ZONE" preload "$PRELOAD" >"$f" 2>"$f.err" || say "recload exited $? (preload)"
      measure_end; alive
      preload_rate=$(kv "$f" records_per_s); preload_secs=$(kv "$f" secs)
      preload_line="$(kv "$f" records) records in ${preload_secs}s: $preload_rate records/s into 1 zone, p50 $(kv "$f" p50_ms) ms, p99 $(kv "$f" p99_ms) ms; non-200 $(kv "$f" non200), item errors $(kv "$f" item_errors), socket errors $(kv "$f" sockerr)"
      say "  preload: $preload_line"
      [ "$(kv "$f" records)" = "$PRELOAD" ] || say "  WARNING: preload stored $(kv "$f" records) of $PRELOAD records"
      psql -d nimbus -c 'VACUUM ANALYZE records' >/dev/null
      run_workload changes ;;
    *) die "unknown workload '$w' in BENCH_WORKLOADS (one many batch changes)" ;;
  esac
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
say "load average after: $load_after"

# ---------------------------------------------------------------- 4. statements per request
# Short extra runs with pg_stat_statements tracking top-level statements and their planning
# (Nimbus sends unprepared PQexecParams, so every statement is parsed and planned each time).
STMT_REPORT=""
if [ "$STATEMENTS" = 1 ] && [ -n "$HAVE_PGSS" ]; then
  psql -d bench -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' >/dev/null
  psql -d postgres -c "ALTER SYSTEM SET pg_stat_statements.track = 'top'" \
    -c "ALTER SYSTEM SET pg_stat_statements.track_planning = on" -c 'SELECT pg_reload_conf()' >/dev/null
  sleep 0.5
  nimbus_oid=$(psql -d postgres -At -c "SELECT oid FROM pg_database WHERE datname = 'nimbus'")
  count_statements() {  # count_statements LABEL RUNFILE
    local label=$1 f=$2 req
    req=$(kv "$f" requests)
    STMT_REPORT+="  $label: $req requests in ${WARMUP}s; per request (calls, mean exec ms, mean plan ms):"$'\n'
    STMT_REPORT+=$(psql -d bench -At -F'|' -c "SELECT round(calls::numeric / greatest($req, 1), 2),
        round(total_exec_time::numeric / greatest(calls, 1), 3), round(total_plan_time::numeric / greatest(calls, 1), 3),
        regexp_replace(left(query, 100), '\s+', ' ', 'g')
      FROM pg_stat_statements WHERE dbid = $nimbus_oid AND calls > 0 ORDER BY calls DESC, total_exec_time DESC LIMIT 8" |
      awk -F'|' '{printf "    %6s x %8s %8s  %s\n", $1, $2, $3, $4}')$'\n'
    STMT_REPORT+=$(psql -d bench -At -c "SELECT '    total ' || round(sum(calls)::numeric / greatest($req, 1), 2) || ' statements/request, '
        || round(sum(total_exec_time)::numeric / greatest($req, 1), 3) || ' ms executing + '
        || round(sum(total_plan_time)::numeric / greatest($req, 1), 3) || ' ms planning per request'
      FROM pg_stat_statements WHERE dbid = $nimbus_oid")$'\n'
  }
  say "statement count: ${WARMUP}s each of 1-record modify (1 zone, 32 zones) and changes, with pg_stat_statements on"
  psql -d bench -c 'SELECT pg_stat_statements_reset()' >/dev/null
  nimbus_modify stmt-one 0 1 "$ONE_ZONES" "$WARMUP"
  count_statements "records/modify, 1 record, 1 zone" "$WORK/runs/stmt-one-nimbus-0.txt"
  psql -d bench -c 'SELECT pg_stat_statements_reset()' >/dev/null
  nimbus_modify stmt-many 0 1 "$MANY_ZONES" "$WARMUP"
  count_statements "records/modify, 1 record, 32 zones" "$WORK/runs/stmt-many-nimbus-0.txt"
  psql -d bench -c 'SELECT pg_stat_statements_reset()' >/dev/null
  f=$WORK/runs/stmt-changes.txt
  "$RECLOAD" changes 127.0.0.1 "$PORT" "/database/1/$CONTAINER/development/private/records/changes" "$TOKEN" \
    "$CLIENTS" "$WARMUP" "$FEED_ZONE" 200 >"$f" 2>/dev/null || true
  count_statements "records/changes, pages of 200" "$f"
  psql -d postgres -c "ALTER SYSTEM RESET pg_stat_statements.track" -c "ALTER SYSTEM RESET pg_stat_statements.track_planning" \
    -c 'SELECT pg_reload_conf()' >/dev/null
elif [ "$STATEMENTS" = 1 ]; then
  STMT_REPORT="  (pg_stat_statements is not available: install postgresql-contrib)"$'\n'
fi

# ---------------------------------------------------------------- server health and shutdown
alive
problem_pattern='^(warning|error) |"level":"(warning|error)"|Fatal error|panic|Segmentation fault|Illegal instruction'
log_problem_count=$(grep -cE "$problem_pattern" "$WORK/nimbus.log" || true)
log_problems=$(grep -m 6 -E "$problem_pattern" "$WORK/nimbus.log" | cut -c1-300 || true)
log_lines=$(wc -l <"$WORK/nimbus.log")
pg_log_problems=$(grep -cE 'ERROR|FATAL|PANIC' "$SOCK/postgres.log" || true)
pg_log_first=$(grep -m 4 -E 'ERROR|FATAL|PANIC' "$SOCK/postgres.log" | cut -c1-250 || true)
rss_peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$NIMBUS_PID/status")
nimbus_rows=$(psql -d nimbus -At -c 'SELECT count(*) FROM records')
t=$(date +%s.%N)
kill -TERM "$NIMBUS_PID"
nimbus_rc=0
for ((i = 0; i < 300; i++)); do kill -0 "$NIMBUS_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$NIMBUS_PID" 2>/dev/null; then nimbus_rc="did not stop in 30 s"; stop_pid "$NIMBUS_PID" KILL 1
else wait "$NIMBUS_PID" || nimbus_rc=$?; fi
stop_secs=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
NIMBUS_PID=""

# ---------------------------------------------------------------- 5. report
set +e +o pipefail
# Fields of $RESULTS: 1 workload 2 variant 3 round 4 rate 5 rate2 6 p50 7 p99 8 p999 9 max 10 requests
#   11 non200 12 5xx 13 item_errors 14 sockerr 15 failed 16 nimbus_cores 17 pg_cores 18 client_cores 19 other_cores 20 load1
median() {  # median WORKLOAD VARIANT FIELD
  awk -v w="$1" -v v="$2" -v f="$3" '$1 == w && $2 == v && $3 > 0 {x[n++] = $f}
    END { if (!n) { print "-"; exit } for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
          m = (n % 2) ? x[(n - 1) / 2] : (x[n / 2 - 1] + x[n / 2]) / 2; printf "%.2f", m }' "$RESULTS"
}
median_per_rec() {  # median_per_rec WORKLOAD VARIANT CORES_FIELD: CPU µs per record
  awk -v w="$1" -v v="$2" -v f="$3" '$1 == w && $2 == v && $3 > 0 && $4 > 0 {x[n++] = $f / $4 * 1e6}
    END { if (!n) { print "-"; exit } for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
          m = (n % 2) ? x[(n - 1) / 2] : (x[n / 2 - 1] + x[n / 2]) / 2; printf "%.1f", m }' "$RESULTS"
}
total() { awk -v w="$1" -v v="$2" -v f="$3" '$1 == w && $2 == v {t += $f} END {print t + 0}' "$RESULTS"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }
verdict() { awk -v r="$1" -v t="$TARGET" 'BEGIN {print (r >= t ? "ok" : "MISSED")}'; }
desc() {
  case $1 in
    one) echo "modify 1 rec/req, 1 zone" ;; many) echo "modify 1 rec/req, 32 zones" ;;
    batch) echo "modify $BATCH rec/req, $BATCH_ZONES zones" ;; changes) echo "changes, pages of 200" ;;
  esac
}
{
  echo
  echo "Per run (rate: records/s; rate2: requests/s for Nimbus, tx/s for pgbench, pages/s for changes;"
  echo "  latency ms: Nimbus p50/p99/p99.9/max per request, pgbench average; cores used during the run):"
  printf '  %-8s %-15s %2s %10s %9s %8s %8s %8s %8s %6s %5s %5s %5s %6s %6s %6s %6s %5s\n' \
    workload variant rd rate rate2 p50 p99 p99.9 max non200 5xx items sock nimbus pg client other load1
  awk '$3 > 0 {printf "  %-8s %-15s %2s %10.0f %9.1f %8.2f %8.2f %8.2f %8.2f %6s %5s %5s %5s %6s %6s %6s %6s %5s\n",
       $1, $2, $3, $4, $5, $6, $7, $8, $9, $11, $12, $13, $14 + $15, $16, $17, $18, $19, $20}' "$RESULTS"
  echo
  echo "================ Nimbus records benchmark summary ================"
  echo "machine: $(nproc) cores, kernel $(uname -r); load average before $load_before, after $load_after"
  echo "nimbus build: $rev; pool size ${POOL_SIZE:-default}, event loops ${EVENT_LOOPS:-default}, write batches ${WRITE_BATCHES:-default}"
  echo "postgres $PG_VERSION, ONE cluster for both sides (Unix socket): $PG_SETTINGS"
  echo "runs: ${SECS}s each, $ROUNDS rounds (nimbus, pgbench…, pgbench…, nimbus), CHECKPOINT before each; medians over rounds"
  echo "nimbus: $CLIENTS keep-alive HTTP clients (bench/recload.c), ~300-byte AppEvent creates; pgbench -M prepared -j2, synchronous_commit=on"
  echo "reference data: preload.sql (1M rows) in ${preload_sql_secs}s"
  eq_summary
  echo "simple-table reference (information only: bench/reference/*.sql on a simpler table, not equal work):"
  printf '  %-28s %-9s %10s  %-16s %10s %6s  %s\n' workload unit nimbus "pgbench script" pgbench ratio "(old target >= $TARGET)"
  missed=""
  for w in $WORKLOADS; do
    unit="rec/s"
    nim=$(median "$w" nimbus 4)
    first=1
    while read -r v script c per rest; do
      [ -n "$v" ] || continue
      pg=$(median "$w" "$v" 4)
      r=$(ratio "$nim" "$pg"); vd=$(verdict "$r")
      [ "$vd" = ok ] || missed+="${missed:+, }$w/$v ($r)"
      label="${script%.sql} -c$c${rest:+ ${rest#-D }}"
      if [ -n "$first" ]; then
        printf '  %-28s %-9s %10.0f  %-16s %10.0f %6s  %s\n' "$(desc "$w")" "$unit" "$nim" "$label" "$pg" "$r" "$vd (info)"
      else
        printf '  %-28s %-9s %10s  %-16s %10.0f %6s  %s\n' "" "" "" "$label" "$pg" "$r" "$vd (info)"
      fi
      first=""
    done < <(pg_variants "$w")
    if [ "$w" = changes ]; then
      pn=$(median changes nimbus 5)
      pgp=""
      for c in $PG_CLIENTS_BULK; do pgp+="${pgp:+, }-c$c $(median changes "changes-c$c" 5)"; done
      printf '  %-28s %-9s %10.0f  pgbench pages/s: %s\n' "" "pages/s" "$pn" "$pgp"
    fi
  done
  echo "  (simple table, information) below $TARGET: ${missed:-none}"
  if [ "$SHAPES" = 1 ]; then
    echo "NimbusKit's shape (zoneID in every record) ÷ the bare shape (RECLOAD_SHAPE=bare), same run: median of the rounds' adjacent pairs (target >= $SHAPE_TARGET):"
    shape_missed=""
    for w in $WORKLOADS; do
      [ "$w" = changes ] && continue
      # The ratio is the median of each round's adjacent pair (steadier than a ratio of medians
      # when other load comes and goes between rounds).
      nk=$(median "$w" nimbus 4); bare=$(median "$w" bare 4)
      r=$(awk -v w="$w" '$1 == w && $3 > 0 && $2 == "nimbus" {a[$3] = $4} $1 == w && $3 > 0 && $2 == "bare" {b[$3] = $4}
        END { for (k in a) if (b[k] > 0) x[n++] = a[k] / b[k]; if (!n) { print "0.00"; exit }
              for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
              printf "%.2f", (n % 2) ? x[(n - 1) / 2] : (x[n / 2 - 1] + x[n / 2]) / 2 }' "$RESULTS")
      ok=$(awk -v r="$r" -v t="$SHAPE_TARGET" 'BEGIN {print (r >= t ? "ok" : "MISS")}')
      [ "$ok" = ok ] || shape_missed+="${shape_missed:+, }$w ($r)"
      printf '  %-28s NimbusKit %10.0f  bare %10.0f rec/s  ratio %s %s;  nimbus CPU µs/record %s vs %s  (per round: %s)\n' \
        "$(desc "$w")" "$nk" "$bare" "$r" "$ok" "$(median_per_rec "$w" nimbus 16)" "$(median_per_rec "$w" bare 16)" \
        "$(awk -v w="$w" '$1 == w && ($2 == "nimbus" || $2 == "bare") && $3 > 0 {x[$3] = x[$3] (x[$3] ? " " : "r" $3 " ") $2 "=" int($4)} END {for (k in x) printf "%s; ", x[k]}' "$RESULTS")"
    done
    echo "  shape targets missed: ${shape_missed:-none}"
  fi
  for w in one many; do
    case " $WORKLOADS " in *" $w "*) ;; *) continue ;; esac
    echo "latency, $(desc "$w") ($CLIENTS clients): p50 $(median "$w" nimbus 6) ms, p99 $(median "$w" nimbus 7) ms," \
         "p99.9 $(median "$w" nimbus 8) ms, max $(median "$w" nimbus 9) ms (medians over rounds);" \
         "pgbench avg: $(for v in $(pg_variants "$w" | awk '{print $1}'); do printf '%s %s ms; ' "$v" "$(median "$w" "$v" 6)"; done)"
  done
  [ -n "$preload_line" ] && echo "preload (changes): $preload_line"
  echo "errors (all Nimbus runs, both shapes): non-200 $(awk '$2 ~ /^(nimbus|bare)$/ {t += $11} END {print t + 0}' "$RESULTS"), 5xx $(awk '$2 ~ /^(nimbus|bare)$/ {t += $12} END {print t + 0}' "$RESULTS")," \
       "item errors $(awk '$2 ~ /^(nimbus|bare)$/ {t += $13} END {print t + 0}' "$RESULTS"), socket errors $(awk '$2 ~ /^(nimbus|bare)$/ {t += $14} END {print t + 0}' "$RESULTS");" \
       "pgbench failed transactions $(awk '$2 !~ /^(nimbus|bare)$/ {t += $15} END {print t + 0}' "$RESULTS")"
  echo "CPU (cores, median over the workload's runs): nimbus / postgres / client / everything else"
  for w in $WORKLOADS; do
    printf '  %-28s nimbus side %s / %s / %s / %s;' "$(desc "$w")" "$(median "$w" nimbus 16)" "$(median "$w" nimbus 17)" "$(median "$w" nimbus 18)" "$(median "$w" nimbus 19)"
    v=$(pg_variants "$w" | head -1 | awk '{print $1}')
    printf '  pgbench %s: - / %s / %s / %s\n' "$v" "$(median "$w" "$v" 17)" "$(median "$w" "$v" 18)" "$(median "$w" "$v" 19)"
  done
  contended=$(awk '$3 > 0 && $19 > 0.3 {printf "%s%s/%s/r%s (%.2f)", n++ ? ", " : "", $1, $2, $3, $19}' "$RESULTS")
  echo "  runs with > 0.3 cores of other load on the machine: ${contended:-none}"
  # Server CPU per record does not depend on how the cores were shared with other people's work:
  # the CPU-bound ceiling on an otherwise idle machine is cores / (server CPU per record).
  echo "server CPU per record (µs, median over runs; load-independent): nimbus + its postgres  vs  pgbench's postgres"
  for w in $WORKLOADS; do
    v=$(pg_variants "$w" | head -1 | awk '{print $1}')
    nu=$(median_per_rec "$w" nimbus 16); np=$(median_per_rec "$w" nimbus 17); pp=$(median_per_rec "$w" "$v" 17)
    printf '  %-28s nimbus %7s + postgres %7s = %7s   pgbench %-14s postgres %7s   CPU ratio %s (ceilings on %s cores: %s vs %s rec/s)\n' \
      "$(desc "$w")" "$nu" "$np" "$(awk -v a="$nu" -v b="$np" 'BEGIN {printf "%.1f", a + b}')" "$v" "$pp" \
      "$(awk -v a="$nu" -v b="$np" -v p="$pp" 'BEGIN {printf "%.2f", (a + b > 0 ? p / (a + b) : 0)}')" "$(nproc)" \
      "$(awk -v a="$nu" -v b="$np" -v n="$(nproc)" 'BEGIN {printf "%.0f", (a + b > 0 ? n * 1e6 / (a + b) : 0)}')" \
      "$(awk -v p="$pp" -v n="$(nproc)" 'BEGIN {printf "%.0f", (p > 0 ? n * 1e6 / p : 0)}')"
  done
  if [ -n "$STMT_REPORT" ]; then
    echo "database statements per Nimbus request (pg_stat_statements, calls/request, mean exec ms):"
    printf '%s' "$STMT_REPORT"
  fi
  echo "nimbus: peak RSS ${rss_peak} KB; $nimbus_rows rows in its records table; SIGTERM -> exit $nimbus_rc in ${stop_secs}s"
  if [ "${log_problem_count:-0}" -gt 0 ]; then
    echo "nimbus log warnings/errors: $log_problem_count of $log_lines lines; first ones:"
    printf '%s\n' "$log_problems" | sed 's/^/  /'
  else
    echo "nimbus log warnings/errors: none ($log_lines log lines in all)"
  fi
  if [ "${pg_log_problems:-0}" -gt 0 ]; then
    echo "postgres log ERROR/FATAL/PANIC lines: $pg_log_problems; first ones:"
    printf '%s\n' "$pg_log_first" | sed 's/^/  /'
  fi
  echo "wall time: $(( $(date +%s) - T0 ))s"
  echo "=================================================================="
}
# Smoke mode: the pipeline worked when every workload measured Nimbus and had its equal-work replay.
if [ -n "$SMOKE" ]; then
  for w in $WORKLOADS; do
    [ -n "$(median "$w" nimbus 4)" ] && awk -v r="$(median "$w" nimbus 4)" 'BEGIN {exit !(r > 0)}' || die "smoke: no Nimbus figure for $w"
    eq_ready "$w" || die "smoke: no equal-work replay for $w (bench/equalwork.sh)"
  done
  [ "$nimbus_rc" = 0 ] || die "smoke: nimbus did not stop cleanly ($nimbus_rc)"
fi
