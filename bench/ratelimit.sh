#!/usr/bin/env bash
# Per-token rate limit benchmark (issue 7, security): does one user's flood leave another user's
# latency unchanged?
#
#   bash bench/ratelimit.sh
#
# 1. Installs what it needs (deploy/install-deps.sh: PostgreSQL server programs, curl), builds
#    nimbus in release mode and bench/recload.c (the load generator of bench/records.sh).
# 2. Starts `nimbus serve --data-dir` (embedded PostgreSQL) with the default per-token limit
#    (requestsPerSecondPerToken / requestBurstPerToken, see GET /limits). Users `flooder` and
#    `victim`, one token each, 50 records each in _defaultZone.
# 3. Phases, each BENCH_SECONDS long:
#      victim alone       the victim's client: records/changes of its zone, BENCH_VICTIM_RATE per
#                         second (paced curl, a new connection each), latency per request
#      victim + flood     the same while the flooder runs recload (records/changes of its own
#                         zone, BENCH_FLOOD_CLIENTS keep-alive connections, closed loop): most of
#                         the flood gets 429 THROTTLED
#    then the same two phases with the limit off (--requests-per-second-per-token 0), for contrast.
# 4. Prints victim p50/p99/max and errors per phase, and the flood's rate, 429 count and p50.
#
# Knobs (environment): BENCH_SECONDS=10 BENCH_VICTIM_RATE=20 BENCH_FLOOD_CLIENTS=16
#   BENCH_NIMBUS_BIN= (use this binary, no build) BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1
#   BENCH_KEEP=1 (keep the temp dir)
# Loopback only; every phase is bounded in time.
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_SECONDS=2 BENCH_VICTIM_RATE=5 BENCH_FLOOD_CLIENTS=2), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 90 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=ratelimit
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 90 BENCH_SECONDS=2 BENCH_VICTIM_RATE=5 BENCH_FLOOD_CLIENTS=2 -- "$@"
ROOT=$PWD
unset NIMBUS_REQUESTS_PER_SECOND_PER_TOKEN  # lib.sh turns the limit off for throughput benches

SECS=${BENCH_SECONDS:-10}
VICTIM_RATE=${BENCH_VICTIM_RATE:-20}
FLOOD_CLIENTS=${BENCH_FLOOD_CLIENTS:-16}

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" NIMBUS_PID="" FLOOD_PID="" DATA=""
cleanup() {
  local rc=$?
  set +e
  stop_pid "$FLOOD_PID" TERM 5
  stop_pid "$NIMBUS_PID" TERM 30
  remove_embedded_cluster
  if [ -n "$WORK" ] && [ -z "${BENCH_KEEP:-}" ]; then rm -rf -- "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- 1. dependencies and build
[ -n "${BENCH_SKIP_INSTALL:-}" ] || bash deploy/install-deps.sh
command -v curl >/dev/null || die "curl is not installed"
release_binary
embedded_workdir
compile_c "$WORK/recload" bench/recload.c -pthread -lm

# ---------------------------------------------------------------- 2. server, users, data
say "starting nimbus (embedded PostgreSQL in $DATA)"
start_embedded_server
LIMITS=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/limits")
RATE=$(printf '%s' "$LIMITS" | grep -o '"requestsPerSecondPerToken":[0-9]*' | cut -d: -f2)
BURST=$(printf '%s' "$LIMITS" | grep -o '"requestBurstPerToken":[0-9]*' | cut -d: -f2)
[ -n "$RATE" ] && [ -n "$BURST" ] || die "GET /limits has no per-token limit: $LIMITS"
data_admin user add flooder >/dev/null
data_admin user add victim >/dev/null
FLOOD_TOKEN=$(data_admin token issue flooder --device flood | awk '/^token:/ {print $2}')
VICTIM_TOKEN=$(data_admin token issue victim --device phone | awk '/^token:/ {print $2}')
[ -n "$FLOOD_TOKEN" ] && [ -n "$VICTIM_TOKEN" ] || die "token issue failed"
OP_PATH=/database/1/iCloud.com.mirxa.AppLocker/development/private/records
for token in "$FLOOD_TOKEN" "$VICTIM_TOKEN"; do
  ops=""
  for i in $(seq 1 50); do ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"r$i\",\"recordType\":\"Note\",\"fields\":{\"text\":{\"value\":\"record $i of the benchmark\"}}}}"; done
  code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data-binary "{\"operations\":[$ops]}" "http://127.0.0.1:$PORT$OP_PATH/modify")
  [ "$code" = 200 ] || die "preloading records answered $code"
done

# ---------------------------------------------------------------- 3. phases
# victim OUT: BENCH_VICTIM_RATE paced records/changes for SECS seconds; one "code seconds" line each.
victim() {
  local out=$1 interval end next now
  interval=$(( 1000000 / VICTIM_RATE ))
  end=$(( ${EPOCHREALTIME/./} + SECS * 1000000 ))
  next=${EPOCHREALTIME/./}
  : >"$out"
  while :; do
    now=${EPOCHREALTIME/./}
    (( now < end )) || break
    if (( next > now )); then sleep "$(printf '0.%06d' $(( next - now )))"; fi
    next=$(( next + interval ))
    curl -s --max-time 5 -o /dev/null -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $VICTIM_TOKEN" \
      -H 'Content-Type: application/json' --data-binary '{"zoneID":{"zoneName":"_defaultZone"},"resultsLimit":50}' \
      "http://127.0.0.1:$PORT$OP_PATH/changes" >>"$out" || echo "000 5" >>"$out"
  done
}
# summary OUT: "n N p50 X p99 Y max Z errors E" of a victim file (ms).
summary() {
  awk '{ if ($1 != 200) e++; print $2 * 1000 }' "$1" | sort -n | awk -v errors="$(awk '$1 != 200' "$1" | wc -l)" '
    { v[NR] = $1 } END { if (NR == 0) { print "n 0"; exit }
      p50 = v[int((NR + 1) * 0.50)]; i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
      printf "n %d p50 %.2f p99 %.2f max %.2f errors %d\n", NR, p50, v[i99], v[NR], errors }'
}
declare -A RESULT FLOOD
run_phase() {  # run_phase NAME FLOOD(0|1)
  local name=$1 flood=$2
  say "phase: $name ($SECS s)"
  FLOOD_PID=""
  if [ "$flood" = 1 ]; then
    "$WORK/recload" changes 127.0.0.1 "$PORT" "$OP_PATH/changes" "$FLOOD_TOKEN" "$FLOOD_CLIENTS" "$SECS" _defaultZone 50 \
      >"$WORK/flood-$name.out" 2>"$WORK/flood-$name.err" &
    FLOOD_PID=$!
    sleep 0.5
  fi
  victim "$WORK/victim-$name.txt"
  RESULT[$name]=$(summary "$WORK/victim-$name.txt")
  if [ -n "$FLOOD_PID" ]; then
    wait "$FLOOD_PID" || true
    FLOOD_PID=""
    local line
    line=$(cat "$WORK/flood-$name.out")
    FLOOD[$name]=$(printf '%s\n' "$line" | tr ' ' '\n' | awk -F= '$1 ~ /^(req_per_s|requests|ok_requests|status_4xx|p50_ms)$/ {printf "%s=%s ", $1, $2}')
  fi
  say "  victim: ${RESULT[$name]}${FLOOD[$name]:+   flood: ${FLOOD[$name]}}"
}

run_phase "limit-on alone" 0
run_phase "limit-on flood" 1
say "restarting nimbus with --requests-per-second-per-token 0 (no limit)"
stop_pid "$NIMBUS_PID" TERM 30
NIMBUS_PID=""
start_embedded_server --requests-per-second-per-token 0
run_phase "limit-off alone" 0
run_phase "limit-off flood" 1

# ---------------------------------------------------------------- 4. report
printf '\nPer-token rate limit: victim latency (records/changes, %s/s, new connection each) while another user floods\n' "$VICTIM_RATE"
printf 'limit: requestsPerSecondPerToken=%s requestBurstPerToken=%s; flood: %s keep-alive clients, %s s per phase; %s cores\n' \
  "$RATE" "$BURST" "$FLOOD_CLIENTS" "$SECS" "$(nproc)"
printf '%-18s %-58s %s\n' phase "victim (ms)" "flood"
for name in "limit-on alone" "limit-on flood" "limit-off alone" "limit-off flood"; do
  printf '%-18s %-58s %s\n' "$name" "${RESULT[$name]}" "${FLOOD[$name]:--}"
done
