#!/usr/bin/env bash
# Instructions per request (issue #18, item 2): Nimbus's own instruction count for each workload of
# bench/records.sh plus records/lookup, records/query and GET /limits, under valgrind's callgrind.
# Unlike timings, the count does not depend on what else the shared machine runs, so a change's
# effect shows in one run. Run it for the binary before and after a change (BENCH_NIMBUS_BIN, then
# the build of the work tree) and compare.
#
#   bash bench/callgrind.sh                       # the release build of the work tree
#   BENCH_NIMBUS_BIN=/tmp/nimbus-old bash bench/callgrind.sh
#   BENCH_COMPARE=/tmp/nimbus-old bash bench/callgrind.sh    # both binaries, side by side
#
# 1. Installs valgrind and PostgreSQL's programs (deploy/install-deps.sh), builds nimbus (release).
# 2. One scratch PostgreSQL cluster (fsync on); per binary a fresh database and one nimbus serve
#    --database-url under `valgrind --tool=callgrind --instr-atstart=no` (nothing counted until
#    switched on). A user, a device token and zones are created.
# 3. For each workload: a warm-up of the same requests (caches, prepared statements, pools), then
#    `callgrind_control --zero`, counting on, a fixed number of requests from ONE client, one after
#    another (so the count does not depend on how concurrent requests happen to combine), counting
#    off, `callgrind_control --dump`; instructions (Ir) of every nimbus thread ÷ requests:
#      one       records/modify, 1 create per request (~300-byte AppEvent)        BENCH_ONE=400
#      batch     records/modify, 100 creates per request                          BENCH_BATCHES=20
#      changes   records/changes, pages of 200 through a zone of 4,000 records    BENCH_PAGES=60
#      lookup    records/lookup of 100 record names                               BENCH_LOOKUPS=40
#      query     records/query, the latest 100 by timestamp                       BENCH_QUERIES=40
#      limits    GET /limits (the HTTP exchange alone)                            BENCH_LIMITS=400
#      replace   records/modify, forceReplace of the same 10 records (the optimistic write)  BENCH_REPLACES=40
#      locked    records/modify, forceReplace of 10 records with a DELETE_SELF reference
#                (the locked write)                                               BENCH_LOCKED=40
#    Per record for the first five: ÷ records. The top functions (inclusive of nothing, self cost)
#    of each dump are printed with callgrind_annotate (BENCH_TOP=15 lines) and the dumps kept in
#    BENCH_OUT (default /tmp/nimbus-callgrind) for callgrind_annotate / kcachegrind.
# 4. A summary: Ir per request and per record for each binary (and the ratio new ÷ old).
#
# Knobs: BENCH_ONE BENCH_BATCHES BENCH_PAGES BENCH_LOOKUPS BENCH_QUERIES BENCH_LIMITS BENCH_TOP
#   BENCH_WORKLOADS="one batch changes lookup query limits" (replace locked: add them) BENCH_NIMBUS_BIN BENCH_COMPARE BENCH_OUT
#   BENCH_FEED_RECORDS=4000 BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1 BENCH_KEEP=1
# Loopback only; bounded (every curl and recload has a time limit); everything stopped by PID.
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_ONE=5 BENCH_BATCHES=2 BENCH_PAGES=2 BENCH_LOOKUPS=2 BENCH_QUERIES=2 BENCH_LIMITS=5 BENCH_TOP=3 BENCH_FEED_RECORDS=400 BENCH_WORKLOADS="one batch changes limits"), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 150 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=callgrind
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 150 BENCH_ONE=5 BENCH_BATCHES=2 BENCH_PAGES=2 BENCH_LOOKUPS=2 BENCH_QUERIES=2 BENCH_LIMITS=5 BENCH_TOP=3 BENCH_FEED_RECORDS=400 BENCH_WORKLOADS="one batch changes limits" -- "$@"
ROOT=$PWD

ONE=${BENCH_ONE:-400}
BATCHES=${BENCH_BATCHES:-20}
PAGES=${BENCH_PAGES:-60}
LOOKUPS=${BENCH_LOOKUPS:-40}
QUERIES=${BENCH_QUERIES:-40}
LIMITS=${BENCH_LIMITS:-400}
REPLACES=${BENCH_REPLACES:-40}
LOCKED=${BENCH_LOCKED:-40}
TOP=${BENCH_TOP:-15}
WORKLOADS=${BENCH_WORKLOADS:-one batch changes lookup query limits}
OUT=${BENCH_OUT:-}  # default /tmp/nimbus-callgrind; in smoke mode the temp dir (removed)
CONTAINER=iCloud.bench.Callgrind
FEED_RECORDS=${BENCH_FEED_RECORDS:-4000}

WORK="" NIMBUS_PID="" PG_BIN="" PG_DATA=""
stop_own_processes() {
  stop_pid "$NIMBUS_PID" TERM 60
}
on_exit_stop stop_own_processes

[ -n "${BENCH_SKIP_INSTALL:-}" ] || bash deploy/install-deps.sh valgrind
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null || die "valgrind is not installed"
pg_find_bin || die "PostgreSQL server programs not found (deploy/install-deps.sh)"
release_binary
BINARIES=("$NIMBUS_BIN")
LABELS=(new)
if [ -n "${BENCH_COMPARE:-}" ]; then
  [ -x "$BENCH_COMPARE" ] || die "BENCH_COMPARE=$BENCH_COMPARE is not an executable"
  BINARIES=("$BENCH_COMPARE" "$NIMBUS_BIN")
  LABELS=(old new)
fi

WORK=$(mktemp -d /tmp/nimbus-callgrind.XXXXXX)
chmod 755 "$WORK"
[ -n "$OUT" ] || if [ -n "$SMOKE" ]; then OUT=$WORK/dumps; else OUT=/tmp/nimbus-callgrind; fi
mkdir -p "$OUT"
compile_c "$WORK/recload" bench/recload.c -pthread
start_bench_postgres max_connections=100 fsync=on synchronous_commit=on
RESULTS=$WORK/results   # label workload requests records Ir

# curl_many N PATH BODY: N requests over one keep-alive connection (one curl, a config of N URLs).
curl_many() {
  local n=$1 path=$2 body=$3 cfg=$WORK/curl.cfg i
  : >"$cfg"
  for ((i = 0; i < n; i++)); do
    [ "$i" = 0 ] || echo "next" >>"$cfg"
    if [ -n "$body" ]; then
      printf 'url = "%s"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata-binary = "@%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
        "$BASE/$path" "$TOKEN" "$body" >>"$cfg"
    else
      printf 'url = "%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' "http://127.0.0.1:$PORT/$path" >>"$cfg"
    fi
  done
  curl -sS --max-time 600 -K "$cfg" >"$WORK/codes" || die "curl failed on $path"
  local bad
  bad=$(grep -vc '^200$' "$WORK/codes" || true)
  [ "$bad" = 0 ] || die "$bad of $n answers to $path were not 200: $(sort "$WORK/codes" | uniq -c | paste -sd' ')"
}
# modify_ok BODY: one records/modify whose every operation succeeded (curl_many checks statuses only).
modify_ok() {
  local answer
  answer=$(curl -sS --max-time 120 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    --data-binary "@$1" "$BASE/records/modify") || die "records/modify failed"
  ! grep -q serverErrorCode <<<"$answer" || die "records/modify answered an error: ${answer:0:400}"
}
RUNS=0
recload_modify() {  # recload_modify REQUESTS BATCH ZONE PREFIX (names PREFIX[-run]-0-<n>-<i>: new every run)
  local total=$(($1 * $2)) line prefix=$4
  [ "$((RUNS++))" = 0 ] || prefix+=-$RUNS
  line=$("$WORK/recload" modify 127.0.0.1 "$PORT" "$BASE_PATH/records/modify" "$TOKEN" 1 600 "$2" "$3" "$prefix" "$total" 2>"$WORK/recload.err") \
    || die "recload failed: $(head -5 "$WORK/recload.err")"
  grep -q ' non200=0 ' <<<" $line " && grep -q ' item_errors=0 ' <<<" $line " || die "recload: $line $(head -3 "$WORK/recload.err")"
}
cg() { callgrind_control "$@" "$NIMBUS_PID" >/dev/null 2>&1 || die "callgrind_control $* failed"; }
# measure LABEL WORKLOAD REQUESTS RECORDS COMMAND...: warm-up run of COMMAND, then a counted run.
measure() {
  local label=$1 workload=$2 requests=$3 records=$4
  shift 4
  "$@"
  cg --zero
  cg --instr=on
  "$@"
  cg --instr=off
  cg --dump="$workload"
  sleep 1
  local dump
  dump=$(ls -t "$WORK"/cg.out.* | head -1)
  local ir
  ir=$(awk '/^totals:/ {print $2; exit}' "$dump")
  [ -n "$ir" ] || die "no instruction total in $dump"
  cp "$dump" "$OUT/$label-$workload.callgrind"
  echo "$label $workload $requests $records $ir" >>"$RESULTS"
  say "$label $workload: $(awk -v i="$ir" -v r="$requests" 'BEGIN {printf "%.0f", i / r}') Ir per request"
}

for b in "${!BINARIES[@]}"; do
  bin=${BINARIES[$b]} label=${LABELS[$b]}
  db=nimbus_$label
  psql -d postgres -c "CREATE DATABASE $db" >/dev/null
  DB_URL="postgresql:///$db?host=$SOCK&user=nimbus"
  say "$label: $bin under callgrind"
  rm -f "$WORK"/cg.out.*
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/cg.out.%p" \
    "$bin" serve --listen 127.0.0.1:0 --database-url "$DB_URL" --data-dir "$WORK/data-$label" \
    --requests-per-second-per-token 0 --prune-interval 0s --admin-listen off </dev/null 2>"$WORK/nimbus.log" &
  NIMBUS_PID=$!
  PORT=""
  for ((i = 0; i < 1800; i++)); do
    PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$WORK/nimbus.log" 2>/dev/null | head -1 | sed 's/.*://' || true)
    [ -n "$PORT" ] && break
    alive; sleep 0.1
  done
  [ -n "$PORT" ] || die "nimbus did not listen within 180 s under valgrind"
  BASE_PATH=/database/1/$CONTAINER/development/private
  BASE=http://127.0.0.1:$PORT$BASE_PATH
  "$bin" user add bench --database-url "$DB_URL" >/dev/null 2>&1 || die "nimbus user add failed"
  TOKEN=$("$bin" token issue bench --device cg --database-url "$DB_URL" 2>&1 | awk '/^token:/ {print $2}')
  [ -n "$TOKEN" ] || die "no token"
  ops=""
  for z in one batch feed; do ops+="${ops:+,}{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"$z\"}}}"; done
  curl -sS --max-time 120 -o /dev/null -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    --data "{\"operations\":[$ops]}" "$BASE/zones/modify" || die "zones/modify failed"
  # The feed zone: FEED_RECORDS records for changes, lookup and query (names feed-0-<n>-<i>).
  RUNS=0
  recload_modify $((FEED_RECORDS / 100)) 100 feed feed

  names=""
  for ((i = 0; i < 100; i++)); do names+="${names:+,}{\"recordName\":\"feed-0-$((i / 10 + 1))-$((i % 10))\"}"; done
  printf '{"zoneID":{"zoneName":"feed"},"records":[%s]}' "$names" >"$WORK/lookup.json"
  printf '{"zoneID":{"zoneName":"feed"},"query":{"recordType":"AppEvent","sortBy":[{"fieldName":"timestamp","ascending":false}]},"resultsLimit":100}' >"$WORK/query.json"
  printf '{"zoneID":{"zoneName":"feed"},"resultsLimit":200}' >"$WORK/changes.json"
  # replace: the same 10 records saved again (a plain save: the optimistic write); locked: 10
  # records referencing a feed record with DELETE_SELF (the locked write, with its edges).
  ops="" linked=""
  for ((i = 0; i < 10; i++)); do
    ops+="${ops:+,}{\"operationType\":\"forceReplace\",\"record\":{\"recordName\":\"replaced-$i\",\"recordType\":\"Replaced\",\"fields\":{\"n\":{\"value\":$i},\"note\":{\"value\":\"saved again and again\"}}}}"
    linked+="${linked:+,}{\"operationType\":\"forceReplace\",\"record\":{\"recordName\":\"linked-$i\",\"recordType\":\"Linked\",\"fields\":{\"n\":{\"value\":$i},\"owner\":{\"value\":{\"recordName\":\"feed-0-1-0\",\"action\":\"DELETE_SELF\"},\"type\":\"REFERENCE\"}}}}"
  done
  printf '{"zoneID":{"zoneName":"feed"},"operations":[%s]}' "$ops" >"$WORK/replace.json"
  printf '{"zoneID":{"zoneName":"feed"},"operations":[%s]}' "$linked" >"$WORK/locked.json"
  for w in $WORKLOADS; do
    case $w in
      one) measure "$label" one "$ONE" "$ONE" recload_modify "$ONE" 1 one one ;;
      batch) measure "$label" batch "$BATCHES" $((BATCHES * 100)) recload_modify "$BATCHES" 100 batch batch ;;
      changes) measure "$label" changes "$PAGES" $((PAGES * 200)) curl_many "$PAGES" records/changes "$WORK/changes.json" ;;
      lookup) measure "$label" lookup "$LOOKUPS" $((LOOKUPS * 100)) curl_many "$LOOKUPS" records/lookup "$WORK/lookup.json" ;;
      query) measure "$label" query "$QUERIES" $((QUERIES * 100)) curl_many "$QUERIES" records/query "$WORK/query.json" ;;
      limits) measure "$label" limits "$LIMITS" 0 curl_many "$LIMITS" limits "" ;;
      replace) modify_ok "$WORK/replace.json"; measure "$label" replace "$REPLACES" $((REPLACES * 10)) curl_many "$REPLACES" records/modify "$WORK/replace.json" ;;
      locked) modify_ok "$WORK/locked.json"; measure "$label" locked "$LOCKED" $((LOCKED * 10)) curl_many "$LOCKED" records/modify "$WORK/locked.json" ;;
      *) die "unknown workload $w" ;;
    esac
  done
  stop_pid "$NIMBUS_PID" TERM 60
  NIMBUS_PID=""
done

echo
echo "================ Nimbus instructions per request (callgrind) ================"
echo "binaries: ${BINARIES[*]}"
echo "one client, requests one after another; Ir = instructions of every nimbus thread while counting"
printf '%-8s' workload
for l in "${LABELS[@]}"; do printf ' %16s %14s' "$l Ir/request" "$l Ir/record"; done
[ "${#LABELS[@]}" = 2 ] && printf ' %10s' "new/old"
echo
for w in $WORKLOADS; do
  printf '%-8s' "$w"
  for l in "${LABELS[@]}"; do
    awk -v l="$l" -v w="$w" '$1 == l && $2 == w {printf " %16.0f %14s", $5 / $3, ($4 > 0 ? sprintf("%.0f", $5 / $4) : "-")}' "$RESULTS"
  done
  if [ "${#LABELS[@]}" = 2 ]; then
    awk -v w="$w" '$2 == w {ir[$1] = $5 / $3} END {printf " %10.2f", (ir["old"] > 0 ? ir["new"] / ir["old"] : 0)}' "$RESULTS"
  fi
  echo
done
echo
DEMANGLE=(cat)
swift demangle --help >/dev/null 2>&1 && DEMANGLE=(swift demangle --simplified)
for l in "${LABELS[@]}"; do
  for w in $WORKLOADS; do
    echo "---- $l $w: top $TOP functions by own instructions ----"
    callgrind_annotate --threshold=100 "$OUT/$l-$w.callgrind" 2>/dev/null | awk '/^-+$/ {n++; next} n == 6 && NF' \
      | sed 's/ \[[^]]*\]$//' | sed -n "1,${TOP}p" | "${DEMANGLE[@]}" | cut -c1-160   # sed, not head: pipefail
  done
done
echo "dumps: $OUT (callgrind_annotate FILE)"
