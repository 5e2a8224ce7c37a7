#!/usr/bin/env bash
# Push benchmark (issue 29, "Figures for the closing note"): pushes per second from one nimbus
# instance to the APNs stand-in beside the stand-in's own ceiling measured with h2load in the same
# run, enqueue → stand-in latency at a fixed offered rate, the write latency a create adds when it
# queues pushes, and nimbus's memory with 100,000 registered devices.
#
#   bash bench/push.sh            # the full run (a few minutes)
#   bash bench/push.sh --smoke    # tiny sizes, < 60 s: the pipeline works end to end (Tests/run.sh)
#
# 1. Installs what it needs (deploy/install-deps.sh: PostgreSQL, curl, nghttp2-client for h2load,
#    python3-h2 and python3-cryptography for the stand-in), builds nimbus in release mode.
# 2. Starts a scratch PostgreSQL cluster and the APNs stand-in (Tests/push/apns-standin.py, HTTP/2
#    over TLS, every request's JWT verified and logged, /usr/bin/python3).
# 3. Reference: h2load against the stand-in: POST /3/device/<token>, a real ES256 provider token
#    (signed by bench/pushload.py with the test key), the APNs headers nimbus sends and a payload of
#    about 300 bytes, one TLS connection with BENCH_H2_STREAMS concurrent streams, BENCH_H2_REQUESTS
#    requests: requests/s as the stand-in counts them (first to last arrival) and as h2load does.
# 4. Memory: nimbus started on a database with no push registration, BENCH_WARM creates, RSS; then
#    BENCH_BULK registrations inserted directly in SQL (BENCH_BULK_USERS users, device_tokens and
#    push_registrations rows), a fresh nimbus, the same creates, RSS. That instance runs the rest.
# 5. Drain: one user with BENCH_DRAIN_DEVICES devices registered (SQL) and an alert subscription;
#    its writing device creates BENCH_DRAIN_RECORDS records in one request: the outbox fills with
#    records × devices pushes in one commit; pushes/s is counted at the stand-in (first to last
#    arrival) and set beside the h2load ceiling (target ≥ 0.5×).
# 6. Latency: a user with BENCH_RATE_DEVICES registered devices (SQL); for each RATE of BENCH_RATES,
#    creates paced at RATE / BENCH_RATE_DEVICES per second for BENCH_RATE_SECONDS over 16 keep-alive
#    connections (bench/pushload.py paced): RATE pushes/s offered. Per push: stand-in arrival − the
#    write's answer (the commit that queued it is just before) and − the write's send; the rate the
#    client reached and the CPU of nimbus, the stand-in and PostgreSQL. Target p99 ≤ 250 ms at 1,000/s.
# 7. Added write latency: users P (2 devices registered through tokens/register) and Q (none), both
#    with the same subscription; BENCH_PAIR creates each, alternating P and Q, one at a time:
#    p50/p99 of each and the p99 ratio (target ≤ 1.10).
# 8. A summary with the machine's load average before and after.
#
# Knobs (environment): BENCH_H2_REQUESTS=20000 BENCH_H2_STREAMS=100 BENCH_DRAIN_DEVICES=200
#   BENCH_DRAIN_RECORDS=100 BENCH_RATES='1000 500' BENCH_RATE_DEVICES=10 BENCH_RATE_SECONDS=10 BENCH_PAIR=1000
#   BENCH_BULK=100000 BENCH_BULK_USERS=1000 BENCH_WARM=200
#   BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1 BENCH_KEEP=1 (keep the temp dir)
#   BENCH_NIMBUS_BIN=path (measure that binary instead of building the release one)
# --smoke (or BENCH_SMOKE=1): every size tiny, the whole run bounded to 60 s; exits non-zero when
#   pushes do not arrive or a figure is missing. Targets are printed but only judged in full runs.
# Loopback only; every load loop is bounded in time; everything it starts is stopped by PID; the
# temp dir is removed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SMOKE=${BENCH_SMOKE:-}
for arg in "$@"; do
  case $arg in
    --smoke) SMOKE=1 ;;
    *) echo "usage: bash bench/push.sh [--smoke]" >&2; exit 64 ;;
  esac
done

if [ -n "$SMOKE" ]; then
  H2_REQUESTS=${BENCH_H2_REQUESTS:-500} H2_STREAMS=${BENCH_H2_STREAMS:-20}
  DRAIN_DEVICES=${BENCH_DRAIN_DEVICES:-20} DRAIN_RECORDS=${BENCH_DRAIN_RECORDS:-10}
  RATE_DEVICES=${BENCH_RATE_DEVICES:-2} RATE_SECONDS=${BENCH_RATE_SECONDS:-2}
  RATES=${BENCH_RATES:-40} PAIR=${BENCH_PAIR:-30} BULK=${BENCH_BULK:-1000} BULK_USERS=${BENCH_BULK_USERS:-10} WARM=${BENCH_WARM:-10}
else
  H2_REQUESTS=${BENCH_H2_REQUESTS:-20000} H2_STREAMS=${BENCH_H2_STREAMS:-100}
  DRAIN_DEVICES=${BENCH_DRAIN_DEVICES:-200} DRAIN_RECORDS=${BENCH_DRAIN_RECORDS:-100}
  RATE_DEVICES=${BENCH_RATE_DEVICES:-10} RATE_SECONDS=${BENCH_RATE_SECONDS:-10}
  RATES=${BENCH_RATES:-"1000 500"} PAIR=${BENCH_PAIR:-1000} BULK=${BENCH_BULK:-100000} BULK_USERS=${BENCH_BULK_USERS:-1000} WARM=${BENCH_WARM:-200}
fi
CONTAINER=iCloud.com.mirxa.AppLocker BUNDLE=com.mirxa.AppLocker
API=/database/1/$CONTAINER/development/private
MODIFY_PATH=$API/records/modify
APNS_KEY_ID=ABC123DEFG APNS_TEAM_ID=DEF123GHIJ
PY=${STANDIN_PYTHON:-/usr/bin/python3}  # Debian's python3-h2 is seen by /usr/bin/python3 only

BENCH_NAME=push
source bench/lib.sh
T0=$(date +%s)
# The smoke run is bounded as a whole: a watchdog (stopped by PID at exit) ends it after 60 s.
WATCHDOG_PID=""
if [ -n "$SMOKE" ]; then
  ( sleep 60; echo "[push] smoke run over 60 s; stopping it" >&2; kill -TERM $$ ) &
  WATCHDOG_PID=$!
fi

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" PG_BIN="" PG_DATA="" NIMBUS_PID="" STANDIN_PID="" H2LOAD_PID="" LOAD_PID=""
stop_own_processes() {
  stop_pid "$H2LOAD_PID" TERM 5
  stop_pid "$LOAD_PID" TERM 5
  stop_pid "$NIMBUS_PID" TERM 30
  stop_pid "$STANDIN_PID" TERM 10
  if [ -n "$WATCHDOG_PID" ]; then  # its sleep first, then the watchdog itself
    for p in $(cat "/proc/$WATCHDOG_PID/task/$WATCHDOG_PID/children" 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
    stop_pid "$WATCHDOG_PID" TERM 2
  fi
}
on_exit_stop stop_own_processes

# ---------------------------------------------------------------- 1. dependencies and build
if [ -z "${BENCH_SKIP_INSTALL:-}" ]; then
  bash deploy/install-deps.sh python3 python3-h2 python3-cryptography nghttp2-client
fi
pg_find_bin || die "PostgreSQL server programs not found (deploy/install-deps.sh)"
command -v curl >/dev/null || die "curl is not installed"
command -v h2load >/dev/null || die "h2load is not installed (Debian's nghttp2-client; deploy/install-deps.sh)"
"$PY" -c 'import h2, cryptography' 2>/dev/null || die "$PY cannot import h2 and cryptography (python3-h2, python3-cryptography)"
if [ -n "${BENCH_NIMBUS_BIN:-}" ]; then
  NIMBUS_BIN=$BENCH_NIMBUS_BIN BENCH_SKIP_BUILD=1
else
  if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
    say "building nimbus (release)"
    swift build -c release --product nimbus >&2 || die "release build failed (swift build -c release --product nimbus)"
  fi
  NIMBUS_BIN="$(swift build -c release --show-bin-path)/nimbus"
fi
[ -x "$NIMBUS_BIN" ] || die "no nimbus binary at $NIMBUS_BIN"
rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
[ -z "$(git -C "$ROOT" status --porcelain -- Sources Package.swift migrations 2>/dev/null)" ] || rev+=" + uncommitted changes in Sources/migrations"
rev+=", binary $NIMBUS_BIN of $(date -r "$NIMBUS_BIN" '+%F %T')"

WORK=$(mktemp -d /tmp/nimbus-push-bench.XXXXXX)
chmod 755 "$WORK"
LOAD="$PY $ROOT/bench/pushload.py"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i + 1); exit}}' <<<"$1"; }

# ---------------------------------------------------------------- 2. PostgreSQL, stand-in
start_bench_postgres
psql -d postgres -c 'CREATE DATABASE nimbus' >/dev/null
DB_URL="postgresql:///nimbus?host=$SOCK&user=nimbus"
admin migrate >"$WORK/migrate.out" 2>&1 || { cat "$WORK/migrate.out" >&2; die "nimbus migrate failed"; }
admin schema import deploy/schemas/applocker.json >/dev/null 2>"$WORK/admin.err" || { cat "$WORK/admin.err" >&2; die "schema import failed"; }

APNS_KEY=$WORK/apns-key.p8 APNS_PUB=$WORK/apns-key.pub.pem
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$APNS_KEY" 2>/dev/null \
  && openssl pkey -in "$APNS_KEY" -pubout -out "$APNS_PUB" 2>/dev/null || die "openssl could not make a P-256 key"
STANDIN_LOG=$WORK/standin-requests.log
"$PY" Tests/push/apns-standin.py --state-dir "$WORK/standin" --public-key "$APNS_PUB" --key-id "$APNS_KEY_ID" \
  --team-id "$APNS_TEAM_ID" --topics "$BUNDLE" --log "$STANDIN_LOG" >"$WORK/standin.out" 2>&1 &
STANDIN_PID=$!
for ((i = 0; i < 300; i++)); do
  STANDIN_PORT=$(grep -a -o -m1 'listening on 127.0.0.1:[0-9]*' "$WORK/standin.out" | sed 's/.*://' || true)
  [ -n "$STANDIN_PORT" ] && break
  kill -0 "$STANDIN_PID" 2>/dev/null || die "the APNs stand-in exited: $(tail -5 "$WORK/standin.out")"
  sleep 0.1
done
[ -n "$STANDIN_PORT" ] || die "the APNs stand-in did not listen within 30 s"
STANDIN_URL=https://127.0.0.1:$STANDIN_PORT STANDIN_CA=$WORK/standin/ca.pem
say "APNs stand-in: pid $STANDIN_PID, port $STANDIN_PORT"

# ---------------------------------------------------------------- 3. reference: h2load
H2_TOKEN=$(printf 'bb%062x' 1)
JWT=$($LOAD jwt "$APNS_KEY" "$APNS_KEY_ID" "$APNS_TEAM_ID") || die "could not sign a provider token"
# About 300 bytes, shaped like nimbus's payload (aps + nimbus notification object).
printf '{"aps":{"alert":{"title":"App blocked"}},"nimbus":{"notificationID":"4f3c2a1e-0b9d-4c8e-9f7a-6d5e4c3b2a19","container":"%s","environment":"development","subscriptionID":"blocked","recordName":"h2load","zoneID":{"zoneName":"_defaultZone"},"reason":"recordCreated","cursor":"AAAAAAAAAAEAAAAB","x":"%s"}}' \
  "$CONTAINER" "$(head -c 40 /dev/zero | tr '\0' x)" >"$WORK/h2load-payload.json"
H2_PAYLOAD_BYTES=$(wc -c <"$WORK/h2load-payload.json")
# standin_sched: "run_ns wait_ns now_ms" of the stand-in's thread (/proc/PID/schedstat: time on a core,
# time runnable but waiting for one). standin_busy BEFORE AFTER: the share of the time it ran, waited
# for a core, and slept (had nothing to do): on a shared machine the ratio follows its share of a core,
# and "slept" says how much of the drain it spent waiting for nimbus.
standin_sched() { echo "$(cut -d' ' -f1-2 "/proc/$STANDIN_PID/schedstat" 2>/dev/null || echo '0 0') $(date +%s%3N)"; }
standin_busy() {
  awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); ms = y[3] - x[3]; if (ms <= 0) ms = 1
    run = (y[1] - x[1]) / 1e6 / ms; wait = (y[2] - x[2]) / 1e6 / ms; sleep = 1 - run - wait; if (sleep < 0) sleep = 0
    printf "ran %.0f%% waited for a core %.0f%% slept %.0f%%", run * 100, wait * 100, sleep * 100 }'
}
say "reference: h2load, $H2_REQUESTS requests, 1 connection, $H2_STREAMS streams, $H2_PAYLOAD_BYTES-byte payload"
timeout 120 h2load -n "$H2_REQUESTS" -c 1 -m "$H2_STREAMS" -t 1 -d "$WORK/h2load-payload.json" \
  -H "authorization: bearer $JWT" -H "apns-topic: $BUNDLE" -H "apns-push-type: alert" -H "apns-priority: 10" \
  -H "apns-expiration: 0" -H "apns-id: 4F3C2A1E-0B9D-4C8E-9F7A-6D5E4C3B2A19" -H "content-type: application/json" \
  "$STANDIN_URL/3/device/$H2_TOKEN" >"$WORK/h2load.out" 2>&1 &
H2LOAD_PID=$!
sched_a=$(standin_sched)
wait "$H2LOAD_PID" || say "h2load exited with $?"
h2_busy=$(standin_busy "$sched_a" "$(standin_sched)")
H2LOAD_PID=""
h2_tool_rate=$(awk '/^finished in/ {gsub(",", "", $4); print $4}' "$WORK/h2load.out")
h2_status=$(grep -a -m1 '^status codes:' "$WORK/h2load.out" || true)
h2_ref=$($LOAD standin-rate "$STANDIN_LOG" "$H2_TOKEN")
say "h2load: $(grep -a -m1 '^finished in' "$WORK/h2load.out"); $h2_status; stand-in: $h2_ref"
h2_ok=$(field "$h2_ref" ok)
h2_rate=$(field "$h2_ref" rate)
[ "${h2_ok:-0}" -gt 0 ] || die "h2load got no 200 from the stand-in: $(tail -12 "$WORK/h2load.out")"

# ---------------------------------------------------------------- helpers
rss_kb() { awk '/^VmRSS:/ {print $2; exit}' "/proc/$1/status" 2>/dev/null || echo 0; }
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
# cpu_snapshot: "nimbus stand-in postgres machine" CPU ticks (postgres: the postmaster and its
# children, the backends; machine: /proc/stat, all cores) and the time in ms.
cpu_snapshot() {
  local pg=0 p postmaster
  postmaster=$(pg_pid)
  for p in $postmaster $(cat "/proc/$postmaster/task/$postmaster/children" 2>/dev/null); do pg=$((pg + $(proc_ticks "$p"))); done
  echo "$(proc_ticks "$NIMBUS_PID") $(proc_ticks "$STANDIN_PID") $pg $(machine_busy) $(date +%s%3N)"
}
# cpu_share BEFORE AFTER: "nimbus N% stand-in S% postgres P% machine M%" (of one core; machine of all $(nproc)).
cpu_share() {
  awk -v a="$1" -v b="$2" -v hz="$CLK_TCK" 'BEGIN {
    split(a, x, " "); split(b, y, " "); s = (y[5] - x[5]) / 1000; if (s <= 0) s = 1
    printf "nimbus %.0f%% stand-in %.0f%% postgres %.0f%% machine %.0f%%", (y[1] - x[1]) / hz / s * 100,
      (y[2] - x[2]) / hz / s * 100, (y[3] - x[3]) / hz / s * 100, (y[4] - x[4]) / hz / s * 100 }'
}
# cpu_per_push BEFORE AFTER N: "nimbus N µs stand-in S µs postgres P µs" of CPU per push (N pushes).
cpu_per_push() {
  awk -v a="$1" -v b="$2" -v n="$3" -v hz="$CLK_TCK" 'BEGIN {
    split(a, x, " "); split(b, y, " "); if (n <= 0) n = 1; f = 1000000 / hz / n
    printf "nimbus %.0f µs stand-in %.0f µs postgres %.0f µs", (y[1] - x[1]) * f, (y[2] - x[2]) * f, (y[3] - x[3]) * f }'
}
PUSH_FLAGS=(--push direct --apns-key-file "$APNS_KEY" --apns-key-id "$APNS_KEY_ID" --apns-team-id "$APNS_TEAM_ID"
            --apns-topics "$CONTAINER=$BUNDLE" --apns-url "$STANDIN_URL" --apns-ca-file "$STANDIN_CA")
SERVERS=0
start_server() {
  local port="" i log=$WORK/nimbus-$((++SERVERS)).log
  "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url "$DB_URL" --data-dir "$WORK/data" \
    --requests-per-second-per-token 0 "${PUSH_FLAGS[@]}" </dev/null >"$log" 2>&1 &
  NIMBUS_PID=$! NIMBUS_LOG=$log
  for ((i = 0; i < 600; i++)); do
    port=$(grep -a -o 'listening on http://[0-9.]*:[0-9]*' "$log" 2>/dev/null | head -1 | sed 's/.*://' || true)
    [ -n "$port" ] && break
    alive
    sleep 0.1
  done
  [ -n "$port" ] || die "nimbus did not listen within 60 s"
  PORT=$port
  say "nimbus: pid $NIMBUS_PID, port $PORT"
}
stop_server() { stop_pid "$NIMBUS_PID" TERM 30; NIMBUS_PID=""; }
# api TOKEN OP BODY: one POST to the private database; dies unless 200 without serverErrorCode.
api() {
  local code
  code=$(curl -sS -o "$WORK/api.json" -w '%{http_code}' --max-time 60 -H "Authorization: Bearer $1" \
    -H 'Content-Type: application/json' --data "$3" "http://127.0.0.1:$PORT$API/$2") || die "$2 failed"
  [ "$code" = 200 ] && ! grep -q serverErrorCode "$WORK/api.json" || die "$2: HTTP $code $(head -c 300 "$WORK/api.json")"
}
SUBSCRIPTION='{"operations":[{"operationType":"create","subscription":{"subscriptionID":"blocked","subscriptionType":"query","query":{"recordType":"BlockedAppEvent"},"notificationInfo":{"title":"App blocked"}}}]}'
# user NAME: a user with a writing device; sets TOKEN (the writer's bearer secret).
user() {
  admin user add "$1" >/dev/null 2>"$WORK/admin.err" || { cat "$WORK/admin.err" >&2; die "nimbus user add $1 failed"; }
  TOKEN=$(admin token issue "$1" --device writer 2>>"$WORK/admin.err" | awk '/^token:/ {print $2}')
  [ -n "$TOKEN" ] || { cat "$WORK/admin.err" >&2; die "nimbus token issue $1 failed"; }
}
# sql_devices USER COUNT PREFIX HEXPREFIX: COUNT device tokens of USER, each registered for push
# (container, development) with APNs token HEXPREFIX + n, inserted directly in SQL.
sql_devices() {
  psql -d nimbus -c "
    INSERT INTO device_tokens (user_id, token_id, token_sha256, device_name)
      SELECT u.id, '$3-' || n, sha256(convert_to('$3-' || n, 'UTF8')), '$3-' || n
      FROM users u, generate_series(1, $2) n WHERE u.name = '$1';
    INSERT INTO push_registrations (user_id, device_token_id, container, environment, apns_environment, apns_token, registered_at)
      SELECT u.id, '$3-' || n, '$CONTAINER', 'development', 'production', '$4' || lpad(to_hex(n), $((64 - ${#4})), '0'), now()
      FROM users u, generate_series(1, $2) n WHERE u.name = '$1';" >/dev/null
}
# wait_pushes PREFIX COUNT SECONDS: until the stand-in saw COUNT pushes of PREFIX's records. Counted
# with grep (the stand-in writes one JSON line per request, keys sorted): parsing the whole log in
# Python every half second took a good part of a core from the pipeline it measures.
wait_pushes() {
  local deadline=$(( $(date +%s) + $3 )) seen
  while :; do
    seen=$(grep -a -c -F "\"recordName\": \"$1-" "$STANDIN_LOG" || true)
    [ "${seen:-0}" -ge "$2" ] && return 0
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    alive
    sleep 0.5
  done
}

# ---------------------------------------------------------------- 4. memory, no registrations vs BULK
user warm; WARM_TOKEN=$TOKEN
user drain; DRAIN_TOKEN=$TOKEN
user rate; RATE_TOKEN=$TOKEN
user pp; P_TOKEN=$TOKEN
user qq; Q_TOKEN=$TOKEN
for ((i = 1; i <= 2; i++)); do
  TOKEN=$(admin token issue pp --device "phone$i" 2>>"$WORK/admin.err" | awk '/^token:/ {print $2}')
  [ -n "$TOKEN" ] || die "nimbus token issue pp phone$i failed"
  eval "P_PHONE$i=\$TOKEN"
done
start_server
for t in "$WARM_TOKEN" "$DRAIN_TOKEN" "$RATE_TOKEN" "$P_TOKEN" "$Q_TOKEN"; do api "$t" subscriptions/modify "$SUBSCRIPTION"; done
warm() { $LOAD paced "$PORT" "$MODIFY_PATH" "$WARM_TOKEN" 100 "$(awk -v n="$WARM" 'BEGIN {print n / 100}')" "warm$1" "$WORK/warm$1.writes" 4 >/dev/null; sleep 1; }
warm 0
rss_none=$(rss_kb "$NIMBUS_PID")
regs_none=$(psql -d nimbus -At -c 'SELECT count(*) FROM push_registrations')
stop_server
say "RSS with $regs_none registrations after $WARM creates: $rss_none KB; inserting $BULK registrations in SQL"
per_user=$(( (BULK + BULK_USERS - 1) / BULK_USERS ))
psql -d nimbus -c "INSERT INTO users (name, record_name) SELECT 'bulk' || u, '_bulk' || md5(u::text) FROM generate_series(1, $BULK_USERS) u" >/dev/null
psql -d nimbus -c "
  INSERT INTO device_tokens (user_id, token_id, token_sha256, device_name)
    SELECT u.id, 'bulk-' || u.id || '-' || n, sha256(convert_to('bulk-' || u.id || '-' || n, 'UTF8')), 'device' || n
    FROM users u, generate_series(1, $per_user) n WHERE u.name LIKE 'bulk%';
  INSERT INTO push_registrations (user_id, device_token_id, container, environment, apns_environment, apns_token, registered_at)
    SELECT d.user_id, d.token_id, '$CONTAINER', 'development', 'production', encode(sha256(convert_to(d.token_id, 'UTF8')), 'hex'), now()
    FROM device_tokens d WHERE d.token_id LIKE 'bulk-%';
  ANALYZE;" >/dev/null
regs_bulk=$(psql -d nimbus -At -c 'SELECT count(*) FROM push_registrations')
start_server
warm 1
rss_bulk=$(rss_kb "$NIMBUS_PID")
say "RSS with $regs_bulk registrations after the same $WARM creates: $rss_bulk KB"

# ---------------------------------------------------------------- 5. drain rate
sql_devices drain "$DRAIN_DEVICES" drainphone cc
sql_devices rate "$RATE_DEVICES" ratephone dd
for i in 1 2; do
  eval "t=\$P_PHONE$i"
  api "$t" tokens/register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$(printf 'ee%062x' "$i")\"}"
done
DRAIN_PUSHES=$((DRAIN_DEVICES * DRAIN_RECORDS))
ops=""
for ((i = 0; i < DRAIN_RECORDS; i++)); do
  ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"drain-$i\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"bench drain $i\"}}}}"
done
say "drain: $DRAIN_RECORDS creates in one request x $DRAIN_DEVICES registered devices = $DRAIN_PUSHES pushes"
cpu_a=$(cpu_snapshot)
sched_a=$(standin_sched)
t_write=$(date +%s%3N)
api "$DRAIN_TOKEN" records/modify "{\"operations\":[$ops]}"
t_acked=$(date +%s%3N)
outbox_after_write=$(psql -d nimbus -At -c 'SELECT count(*) FROM push_outbox')
wait_pushes drain "$DRAIN_PUSHES" $(( SMOKE ? 20 : 120 )) || say "drain: only part of the pushes arrived within the time limit"
cpu_b=$(cpu_snapshot)
drain_busy=$(standin_busy "$sched_a" "$(standin_sched)")
drain_cpu=$(cpu_share "$cpu_a" "$cpu_b")
drain_out=$($LOAD drain "$STANDIN_LOG" drain)
drain_rate=$(field "$drain_out" rate) drain_n=$(field "$drain_out" pushes) drain_ok=$(field "$drain_out" ok)
drain_from_ack=$(( $(field "$drain_out" last) - t_acked ))
drain_cpu_push=$(cpu_per_push "$cpu_a" "$cpu_b" "$drain_n")
say "drain: $drain_out (write took $((t_acked - t_write)) ms; outbox after it: $outbox_after_write)"

# ---------------------------------------------------------------- 6. latency at fixed offered rates
# One run per rate in RATES (the first is the target's); the rate user's RATE_DEVICES devices.
RUNS=0
for rate in $RATES; do
  RUNS=$((RUNS + 1))
  write_rate=$(awk -v r="$rate" -v d="$RATE_DEVICES" 'BEGIN {print r / d}')
  say "latency: $write_rate creates/s x $RATE_DEVICES devices = $rate pushes/s offered for $RATE_SECONDS s"
  cpu_a=$(cpu_snapshot)
  paced_out=$($LOAD paced "$PORT" "$MODIFY_PATH" "$RATE_TOKEN" "$write_rate" "$RATE_SECONDS" "rate$RUNS" "$WORK/rate$RUNS.writes" 16)
  cpu_b=$(cpu_snapshot)
  wait_pushes "rate$RUNS" "$(( $(field "$paced_out" sent) * RATE_DEVICES ))" 30 || say "latency: not every push arrived within 30 s"
  lat_out=$($LOAD latency "$STANDIN_LOG" "$WORK/rate$RUNS.writes" "rate$RUNS")
  say "latency: client: $paced_out; $(tr '\n' ';' <<<"$lat_out")"
  eval "lat${RUNS}_rate=$rate lat${RUNS}_writes=$write_rate"
  eval "lat${RUNS}_ack='$(grep '^ack' <<<"$lat_out")' lat${RUNS}_send='$(grep '^send' <<<"$lat_out")'"
  eval "lat${RUNS}_head='$(grep '^pushes' <<<"$lat_out")' lat${RUNS}_client='$paced_out' lat${RUNS}_cpu='$(cpu_share "$cpu_a" "$cpu_b")'"
done

# ---------------------------------------------------------------- 7. added write latency
say "write latency: $PAIR creates each through P (2 registered devices) and Q (none), alternating"
pair_out=$($LOAD pair "$PORT" "$MODIFY_PATH" "$P_TOKEN" "$Q_TOKEN" "$PAIR" $(( SMOKE ? 10 : 90 )) pair)
say "write latency: $(tr '\n' ';' <<<"$pair_out")"
pa=$(grep '^a ' <<<"$pair_out") pb=$(grep '^b ' <<<"$pair_out")
pair_ratio=$(awk -v a="$(field "$pa" p99)" -v b="$(field "$pb" p99)" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
pair_ratio50=$(awk -v a="$(field "$pa" p50)" -v b="$(field "$pb" p50)" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
wait_pushes pair-a "$(( $(field "$pa" n) * 2 ))" 20 || say "write latency: not every push of P's creates arrived"
pair_pushes=$(field "$($LOAD drain "$STANDIN_LOG" pair-a)" pushes)

outbox_left=$(psql -d nimbus -At -c 'SELECT count(*) FROM push_outbox')
peak_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$NIMBUS_PID/status")
rss_end=$(rss_kb "$NIMBUS_PID")
problem_pattern='^(warning|error) |"level":"(warning|error)"|Fatal error|panic|Segmentation fault|Illegal instruction'
log_problem_count=$(cat "$WORK"/nimbus-*.log | grep -a -c -E "$problem_pattern" || true)
log_problems=$(cat "$WORK"/nimbus-*.log | grep -a -m 4 -E "$problem_pattern" | cut -c1-200 || true)
stop_server
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- 8. report
set +e +o pipefail
verdict() { if [ -n "$SMOKE" ]; then echo "not judged in --smoke"; elif awk "BEGIN {exit !($1)}"; then echo ok; else echo MISSED; fi; }
ratio=$(awk -v a="$drain_rate" -v b="$h2_rate" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
{
  echo
  echo "================ Nimbus push benchmark summary${SMOKE:+ (--smoke: tiny sizes)} ================"
  echo "machine: $(nproc) cores, kernel $(uname -r); load average before $load_before, after $load_after"
  echo "nimbus build: $rev; PostgreSQL $PG_VERSION (scratch cluster, Unix socket)"
  echo "APNs stand-in: Tests/push/apns-standin.py ($PY, one asyncio thread; verifies every JWT, logs every request)"
  echo "reference (h2load → stand-in, 1 TLS connection, $H2_STREAMS streams, $H2_PAYLOAD_BYTES-byte payload, $H2_REQUESTS requests):"
  echo "  $h2_rate requests/s counted at the stand-in (h2load says ${h2_tool_rate:-?} req/s; $h2_status)"
  echo "  the stand-in meanwhile: $h2_busy"
  echo "nimbus → stand-in drain ($DRAIN_RECORDS creates in one request × $DRAIN_DEVICES devices; outbox $outbox_after_write rows at the commit):"
  echo "  $drain_rate pushes/s at the stand-in ($drain_n pushes, $drain_ok answered 200; median payload $(field "$drain_out" payload_bytes) B;" \
       "at most $(field "$drain_out" max_streams) requests parsed from one read at the stand-in, not streams in flight; last push $drain_from_ack ms after the write's answer)"
  echo "  CPU while draining (% of one core): $drain_cpu; per push: $drain_cpu_push"
  echo "  the stand-in meanwhile: $drain_busy"
  echo "  ratio to the h2load ceiling: $ratio (target >= 0.5: $(verdict "$ratio >= 0.5"))"
  echo "enqueue → stand-in latency, ms (per push: stand-in arrival − the write's answer [ack], − the write's send [send]):"
  for ((n = 1; n <= RUNS; n++)); do
    eval "r=\$lat${n}_rate w=\$lat${n}_writes ack=\$lat${n}_ack send=\$lat${n}_send head=\$lat${n}_head client=\$lat${n}_client cpu=\$lat${n}_cpu"
    echo "  offered $r pushes/s ($w creates/s × $RATE_DEVICES devices, $RATE_SECONDS s): $ack; $send"
    echo "    stand-in: $head; client: $client; CPU: $cpu"
  done
  echo "  p99 at $lat1_rate pushes/s offered: $(field "$lat1_ack" p99) ms (target <= 250 at 1,000/s: $(verdict "$(field "$lat1_ack" p99) <= 250"));" \
       "pushes/s reached at the stand-in: $(field "$lat1_head" rate)"
  echo "added write latency (records/modify, one create, one at a time, $PAIR each, alternating), ms:"
  echo "  queues pushes for 2 devices: $(cut -d' ' -f2- <<<"$pa")"
  echo "  no registered device:        $(cut -d' ' -f2- <<<"$pb")"
  echo "  p99 ratio $pair_ratio (target <= 1.10: $(verdict "$pair_ratio <= 1.10")); p50 ratio $pair_ratio50; $pair_pushes pushes of P's creates arrived"
  echo "memory with $regs_bulk registered devices: $(awk -v k="$rss_bulk" 'BEGIN {printf "%.1f", k / 1024}') MB RSS" \
       "(with none: $(awk -v k="$rss_none" 'BEGIN {printf "%.1f", k / 1024}') MB; the same $WARM creates on a fresh instance)"
  echo "memory (RSS of nimbus after $WARM creates on a fresh instance; registrations inserted directly in SQL):"
  echo "  $regs_none registrations: $rss_none KB; $regs_bulk registrations ($BULK_USERS users): $rss_bulk KB" \
       "(delta $((rss_bulk - rss_none)) KB); that instance after the whole run: $rss_end KB, peak $peak_kb KB"
  echo "outbox left at the end: $outbox_left rows"
  if [ "${log_problem_count:-0}" -gt 0 ]; then
    echo "nimbus log warnings/errors: $log_problem_count; first ones:"
    printf '%s\n' "$log_problems" | sed 's/^/  /'
  else
    echo "nimbus log warnings/errors: none"
  fi
  echo "took $(( $(date +%s) - T0 )) s"
  echo "===================================================================="
}
# The pipeline checks (every run): the figures exist and every push arrived.
fails=()
[ "${drain_ok:-0}" -ge "$DRAIN_PUSHES" ] || fails+=("drain: $drain_ok of $DRAIN_PUSHES pushes answered 200")
for ((n = 1; n <= RUNS; n++)); do
  eval "head=\$lat${n}_head client=\$lat${n}_client"
  [ "$(field "$head" unpushed)" = 0 ] || fails+=("latency: writes without a push: $head")
  [ "$(field "$head" pushes)" -gt 0 ] 2>/dev/null || fails+=("latency: no push matched a write")
  [ "$(field "$client" non200)" = 0 ] || fails+=("latency: some writes were not 200: $client")
done
[ "${pair_pushes:-0}" -ge $(( $(field "$pa" n) * 2 )) ] || fails+=("write latency: $pair_pushes pushes of $(( $(field "$pa" n) * 2 ))")
for v in h2_rate drain_rate rss_none rss_bulk pair_ratio; do
  [ -n "${!v}" ] && [ "${!v}" != 0 ] && [ "${!v}" != 0.00 ] || fails+=("figure $v missing")
done
[ "$(field "$pair_out" non200)" = 0 ] || fails+=("write latency: some writes were not 200")
if ((${#fails[@]})); then
  printf '%s\n' "${fails[@]}" | while read -r f; do say "FAILED: $f"; done
  exit 1
fi
say "the pipeline works: every push arrived, every figure printed"
