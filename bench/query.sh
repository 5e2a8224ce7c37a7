#!/usr/bin/env bash
# The apps' queries at a million records in one zone, against the same queries in a small zone.
#
#   bash bench/query.sh
#
# 1. Installs what it needs, builds nimbus (release), starts `nimbus serve --data-dir` (embedded
#    PostgreSQL, default durability) on a loopback port.
# 2. Loads BENCH_QUERY_RECORDS (1,000,000) BlockedAppEvent records into zone `big` through
#    records/modify (100 per request, 16 clients: bench/recload.c; the rate is reported), and
#    BENCH_QUERY_SMALL (1,000) into zone `small`; 10 LockedAppList records into each.
# 3. Runs each query BENCH_QUERY_REQUESTS (200) times, one after another, and prints p50/p99 of
#    curl's time_total for the big zone next to the small zone (the reference: a query that
#    reads its page from an index costs the same at any zone size; one that sorts the zone does not):
#      latest 100 BlockedAppEvent by timestamp (AppLocker's phone dashboard), its next page
#      (continuationMarker), LockedAppList by updatedAt.
#
# Knobs (environment): BENCH_QUERY_RECORDS=1000000 BENCH_QUERY_SMALL=1000 BENCH_QUERY_REQUESTS=200
#   BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1 BENCH_NIMBUS_BIN=PATH BENCH_KEEP=1 (keep the temp dir)
# Loopback only; every phase is bounded in time.
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_QUERY_RECORDS=500 BENCH_QUERY_SMALL=250 BENCH_QUERY_REQUESTS=5), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 90 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=query
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 90 BENCH_QUERY_RECORDS=500 BENCH_QUERY_SMALL=250 BENCH_QUERY_REQUESTS=5 -- "$@"
ROOT=$PWD

RECORDS=${BENCH_QUERY_RECORDS:-1000000}
SMALL=${BENCH_QUERY_SMALL:-1000}
REQUESTS=${BENCH_QUERY_REQUESTS:-200}
CONTAINER=iCloud.bench.Query

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" NIMBUS_PID="" DATA=""
cleanup() {
  local rc=$?
  set +e
  stop_pid "$NIMBUS_PID" TERM 30
  remove_embedded_cluster
  if [ -n "$WORK" ] && [ -z "${BENCH_KEEP:-}" ]; then rm -rf -- "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- 1. dependencies, build, server
[ -n "${BENCH_SKIP_INSTALL:-}" ] || bash deploy/install-deps.sh
command -v curl >/dev/null || die "curl is not installed"
release_binary
embedded_workdir
compile_c "$WORK/recload" bench/recload.c -pthread

say "starting nimbus (embedded PostgreSQL in $DATA)"
start_embedded_server
data_admin user add bench >/dev/null
TOKEN=$(data_admin token issue bench --device phone | awk '/^token:/ {print $2}')
[ -n "$TOKEN" ] || die "token issue failed"
BASE=http://127.0.0.1:$PORT/database/1/$CONTAINER/development/private
post() {  # post ROUTE BODY: the answer on stdout; dies on a non-200
  local code
  code=$(curl -sS --max-time 60 -o "$WORK/answer.json" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "$2" "$BASE/$1") || die "curl $1 failed"
  [ "$code" = 200 ] || die "$1 answered $code: $(head -c 300 "$WORK/answer.json")"
  cat "$WORK/answer.json"
}
post zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"big"}}},
  {"operationType":"create","zone":{"zoneID":{"zoneName":"small"}}}]}' >/dev/null

# ---------------------------------------------------------------- 2. data
load() {  # load ZONE COUNT
  local out=$WORK/load-$1.txt
  RECLOAD_RECORD_TYPE=BlockedAppEvent "$WORK/recload" modify 127.0.0.1 "$PORT" \
    "/database/1/$CONTAINER/development/private/records/modify" "$TOKEN" 16 1800 100 "$1" "evt-$1" "$2" >"$out" 2>"$out.err" \
    || die "recload failed: $(head -3 "$out.err")"
  grep -q 'item_errors=0 non200=0' "$out" || die "loading $1 had errors: $(cat "$out") $(head -3 "$out.err")"
  cat "$out"
}
say "loading $SMALL BlockedAppEvent records into zone small"
load small "$SMALL" >/dev/null
say "loading $RECORDS BlockedAppEvent records into zone big (records/modify, 100 per request, 16 clients)"
big_load=$(load big "$RECORDS")
big_rate=$(printf '%s' "$big_load" | tr ' ' '\n' | awk -F= '$1 == "records_per_s" {print $2}')
big_secs=$(printf '%s' "$big_load" | tr ' ' '\n' | awk -F= '$1 == "secs" {print $2}')
say "  loaded in ${big_secs}s: $big_rate records/s"
for zone in big small; do
  ops=""
  for d in $(seq 1 10); do
    ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"locked-device$d\",\"recordType\":\"LockedAppList\",\"fields\":{\"deviceName\":{\"value\":\"device$d\",\"type\":\"STRING\"},\"updatedAt\":{\"value\":$((1795000000000 + d)),\"type\":\"TIMESTAMP\"}}}}"
  done
  post records/modify "{\"zoneID\":{\"zoneName\":\"$zone\"},\"operations\":[$ops]}" >/dev/null
done

# ---------------------------------------------------------------- 3. queries
latest() { printf '{"zoneID":{"zoneName":"%s"},"query":{"recordType":"BlockedAppEvent","sortBy":[{"fieldName":"timestamp","ascending":false}]},"resultsLimit":100%s}' "$1" "${2:+,\"continuationMarker\":\"$2\"}"; }
lists() { printf '{"zoneID":{"zoneName":"%s"},"query":{"recordType":"LockedAppList","sortBy":[{"fieldName":"updatedAt","ascending":false}]}}' "$1"; }
# measure NAME BODY: REQUESTS sequential records/query requests; prints "p50 p99" in ms.
measure() {
  local out=$WORK/times-$1.txt i code
  : >"$out"
  for ((i = 0; i < REQUESTS; i++)); do
    code=$(curl -sS --max-time 30 -o "$WORK/q.json" -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $TOKEN" \
      -H 'Content-Type: application/json' --data-binary "$2" "$BASE/records/query") || die "curl failed ($1)"
    [ "${code%% *}" = 200 ] || die "records/query ($1) answered ${code%% *}: $(head -c 300 "$WORK/q.json")"
    echo "${code#* }" >>"$out"
  done
  sort -n "$out" | awk '{v[NR] = $1 * 1000} END {p50 = v[int((NR + 1) * 0.50)]; p99 = v[int(NR * 0.99 + 0.5)]; printf "%.2f %.2f", p50, p99}'
}
check_page() {  # check_page EXPECTED_COUNT: the last answer had that many records, newest first
  local n
  n=$(grep -o '"recordName":"[^"]*"' "$WORK/q.json" | wc -l)
  [ "$n" = "$1" ] || die "expected $1 records, got $n: $(head -c 300 "$WORK/q.json")"
}
declare -A results
for zone in big small; do
  say "queries in zone $zone ($REQUESTS each)"
  results[$zone-latest]=$(measure "$zone-latest" "$(latest "$zone")"); check_page 100
  marker=$(grep -o '"continuationMarker":"[^"]*"' "$WORK/q.json" | cut -d'"' -f4)
  [ -n "$marker" ] || die "no continuationMarker after the first 100 of zone $zone"
  results[$zone-next]=$(measure "$zone-next" "$(latest "$zone" "$marker")"); check_page 100
  results[$zone-lists]=$(measure "$zone-lists" "$(lists "$zone")"); check_page 10
done
rss=$(awk '/VmHWM/ {print $2}' "/proc/$NIMBUS_PID/status" 2>/dev/null || echo '?')

echo "================ Nimbus query benchmark summary ================"
echo "machine: $(nproc) cores; nimbus commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); embedded PostgreSQL, fsync on"
echo "zone big: $RECORDS BlockedAppEvent + 10 LockedAppList, loaded through records/modify in ${big_secs}s ($big_rate records/s)"
echo "zone small (reference): $SMALL BlockedAppEvent + 10 LockedAppList"
echo "$REQUESTS sequential records/query requests each, curl time_total (ms)"
printf '  %-44s %16s %16s\n' "query" "big p50 / p99" "small p50 / p99"
for q in latest:"latest 100 BlockedAppEvent by timestamp" next:"next 100 (continuationMarker)" lists:"LockedAppList by updatedAt"; do
  key=${q%%:*}; label=${q#*:}
  read -r b50 b99 <<<"${results[big-$key]}"
  read -r s50 s99 <<<"${results[small-$key]}"
  printf '  %-44s %7s / %-7s %7s / %-7s\n' "$label" "$b50" "$b99" "$s50" "$s99"
done
echo "nimbus peak RSS: ${rss} KB"
echo "================================================================="
