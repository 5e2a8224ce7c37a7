#!/usr/bin/env bash
# Slow-loris benchmark (issue 7, security): 1,000 slow-header connections must not starve real
# clients, and the server must close every attack socket within the header timeout + 1 s.
#
#   bash bench/slowloris.sh
#
# 1. Installs what it needs (deploy/install-deps.sh plus slowhttptest from apt), builds nimbus in
#    release mode and Tests/integration/slowloris.c.
# 2. Starts `nimbus serve --data-dir` (embedded PostgreSQL) with --header-timeout-seconds
#    BENCH_HEADER_TIMEOUT (default 10, the shipped default). A user and a device token.
# 3. Phases:
#    baseline     real clients alone: BENCH_PROBES requests (GET /healthz and an authenticated
#                 users/current, alternating, paced 10/s, a new connection each), latency
#    slowhttptest `slowhttptest -H -c BENCH_CONNECTIONS -r BENCH_CONNECTIONS -i 2`: slow headers
#                 (a random header line every 2 s, never the end of the head), for
#                 header timeout + 12 s; the real clients run at the same time; `ss` counts the
#                 server's established connections every 0.5 s; slowhttptest's CSV says how many
#                 of its connections were open each second and whether its probe got through
#    per-socket   Tests/integration/slowloris.c with BENCH_CONNECTIONS connections (half silent
#                 for 5 s before their first byte): the lifetime of every attack socket from
#                 connect to the server's close (max must be <= header timeout + 1 s)
#    slow body    `slowhttptest -B` (R-U-Dead-Yet): BENCH_CONNECTIONS POSTs announcing 8 KiB and
#                 sending a few bytes every 2 s — never idle for the body timeout — for body timeout
#                 + 12 s; every one must be closed by the server by second body timeout + 3
#                 (minBodyBytesPerSecond, default 1024: the bytes earn almost nothing)
# 4. Prints the real clients' p50/p99/max and errors per phase, slowhttptest's peak open
#    connections and the second by which all were closed, and the per-socket lifetimes.
#
# Knobs (environment): BENCH_CONNECTIONS=1000 BENCH_HEADER_TIMEOUT=10 BENCH_BODY_TIMEOUT=30 BENCH_PROBES=60
#   BENCH_ATTACK_SLACK=12 BENCH_NIMBUS_BIN= (use this binary, no build) BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1 BENCH_KEEP=1
# Loopback only; every phase is bounded in time.
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_CONNECTIONS=20 BENCH_HEADER_TIMEOUT=2 BENCH_BODY_TIMEOUT=3 BENCH_PROBES=6 BENCH_ATTACK_SLACK=5), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 120 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=slowloris
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 120 BENCH_CONNECTIONS=20 BENCH_HEADER_TIMEOUT=2 BENCH_BODY_TIMEOUT=3 BENCH_PROBES=6 BENCH_ATTACK_SLACK=5 -- "$@"
ROOT=$PWD

CONNECTIONS=${BENCH_CONNECTIONS:-1000}
TIMEOUT=${BENCH_HEADER_TIMEOUT:-10}
PROBES=${BENCH_PROBES:-60}
ATTACK_SLACK=${BENCH_ATTACK_SLACK:-12}  # seconds each slowhttptest phase runs beyond its timeout
ATTACK_SECONDS=$((TIMEOUT + ATTACK_SLACK))
BODY_TIMEOUT=${BENCH_BODY_TIMEOUT:-30}
BODY_ATTACK_SECONDS=$((BODY_TIMEOUT + ATTACK_SLACK))

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" NIMBUS_PID="" ATTACK_PID="" SAMPLER_PID="" DATA=""
cleanup() {
  local rc=$?
  set +e
  stop_pid "$ATTACK_PID" TERM 5
  stop_pid "$SAMPLER_PID" TERM 5
  stop_pid "$NIMBUS_PID" TERM 30
  remove_embedded_cluster
  if [ -n "$WORK" ] && [ -z "${BENCH_KEEP:-}" ]; then rm -rf -- "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- 1. dependencies and build
if [ -z "${BENCH_SKIP_INSTALL:-}" ]; then
  extra=()
  command -v slowhttptest >/dev/null 2>&1 || extra+=(slowhttptest)
  bash deploy/install-deps.sh "${extra[@]}"
fi
command -v slowhttptest >/dev/null || die "slowhttptest is not installed (apt-get install slowhttptest)"
command -v ss >/dev/null || die "ss (iproute2) is not installed"
command -v curl >/dev/null || die "curl is not installed"
release_binary
embedded_workdir
compile_c "$WORK/slowloris" Tests/integration/slowloris.c
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# ---------------------------------------------------------------- 2. server
say "starting nimbus (embedded PostgreSQL in $DATA), --header-timeout-seconds $TIMEOUT"
start_embedded_server --header-timeout-seconds "$TIMEOUT" --body-timeout-seconds "$BODY_TIMEOUT"
data_admin user add alice >/dev/null
TOKEN=$(data_admin token issue alice --device mac | awk '/^token:/ {print $2}')
[ -n "$TOKEN" ] || die "token issue failed"
BASE=http://127.0.0.1:$PORT
USER_URL=$BASE/database/1/iCloud.com.mirxa.AppLocker/development/private/users/current

# ---------------------------------------------------------------- 3. phases
# probes OUT: PROBES real requests paced 10/s, alternating /healthz and users/current; one
# "code seconds" line each (000 5 for a failure or a 5 s timeout).
probes() {
  local out=$1 i
  : >"$out"
  for ((i = 0; i < PROBES; i++)); do
    if ((i % 2)); then
      curl -s --max-time 5 -o /dev/null -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $TOKEN" "$USER_URL" >>"$out" || echo "000 5" >>"$out"
    else
      curl -s --max-time 5 -o /dev/null -w '%{http_code} %{time_total}\n' "$BASE/healthz" >>"$out" || echo "000 5" >>"$out"
    fi
    sleep 0.1
  done
}
# end_attack SECONDS: lets slowhttptest (ATTACK_PID, run for SECONDS) end by itself, at most 30 s
# late, then stops it.
end_attack() {
  local i
  for ((i = 0; i < ($1 + 30) * 10; i++)); do kill -0 "$ATTACK_PID" 2>/dev/null || break; sleep 0.1; done
  stop_pid "$ATTACK_PID" TERM 5
  ATTACK_PID=""
}
# peak_connected CSV: the most connections slowhttptest held at once (CSV columns: Seconds,Closed,
# Pending,Connected,Service Available).
peak_connected() { awk -F, 'NR > 1 && $4 > m {m = $4} END {print m + 0}' "$1"; }
# all_closed_at OUT: the second at which slowhttptest stopped early with "No open connections
# left" (the server had closed them all); nothing when it ran to its end.
all_closed_at() {
  local plain
  plain=$(sed 's/\x1b\[[0-9;]*m//g' "$1")
  grep -q 'No open connections left' <<<"$plain" || return 0
  grep -o 'Test ended on [0-9]*' <<<"$plain" | grep -o '[0-9]*$' | tail -n 1
}
summary() {  # summary OUT: "n N p50 X p99 Y max Z errors E" (ms)
  local errors
  errors=$(awk '$1 != 200' "$1" | wc -l)
  awk '{ print $2 * 1000 }' "$1" | sort -n | awk -v errors="$errors" '
    { v[NR] = $1 } END { if (NR == 0) { print "n 0"; exit }
      i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
      printf "n %d p50 %.2f p99 %.2f max %.2f errors %d\n", NR, v[int((NR + 1) / 2)], v[i99], v[NR], errors }'
}
established() { ss -Htn state established "( sport = :$PORT )" 2>/dev/null | wc -l; }

say "phase: baseline ($PROBES real requests)"
probes "$WORK/probes-baseline.txt"
BASELINE=$(summary "$WORK/probes-baseline.txt")
say "  real clients: $BASELINE"

say "phase: slowhttptest, $CONNECTIONS slow-header connections for $ATTACK_SECONDS s"
( while :; do printf '%s %s\n' "$(date +%s.%N)" "$(established)"; sleep 0.5; done ) >"$WORK/ss.txt" &
SAMPLER_PID=$!
slowhttptest -H -c "$CONNECTIONS" -r "$CONNECTIONS" -i 2 -x 24 -p 3 -l "$ATTACK_SECONDS" -u "$BASE/healthz" \
  -g -o "$WORK/slowhttptest" >"$WORK/slowhttptest.out" 2>&1 &
ATTACK_PID=$!
sleep 2
probes "$WORK/probes-attack.txt"
DURING=$(summary "$WORK/probes-attack.txt")
say "  real clients during the attack: $DURING"
end_attack "$ATTACK_SECONDS"
stop_pid "$SAMPLER_PID" TERM 2
SAMPLER_PID=""
kill -0 "$NIMBUS_PID" 2>/dev/null || die "nimbus died during the attack"
CSV=$WORK/slowhttptest.csv
[ -f "$CSV" ] || die "slowhttptest wrote no CSV; its output:$(printf '\n'; tail -20 "$WORK/slowhttptest.out")"
# The CSV's last column, Service Available, is scaled to the connection count for the chart: 0
# means the probe got no answer.
PEAK=$(peak_connected "$CSV")
FULL_AT=$(awk -F, -v n="$CONNECTIONS" 'NR > 1 && $4 >= n {print $1; exit}' "$CSV")
ALL_CLOSED_AT=$(all_closed_at "$WORK/slowhttptest.out")
UNAVAILABLE=$(awk -F, 'NR > 1 && $5 == 0 {c++} END {print c + 0}' "$CSV")
SS_PEAK=$(awk '$2 > m {m = $2} END {print m + 0}' "$WORK/ss.txt")
say "  slowhttptest: all $CONNECTIONS connected by second ${FULL_AT:-never}, none left open at second ${ALL_CLOSED_AT:-never}, probe unavailable in $UNAVAILABLE samples; ss peak $SS_PEAK established"

say "phase: per-socket lifetimes, $CONNECTIONS connections (half silent 5 s first)"
"$WORK/slowloris" "$PORT" "$CONNECTIONS" $((TIMEOUT + 20)) 1000 5000 >"$WORK/per-socket.out" 2>"$WORK/per-socket.err" \
  || die "slowloris failed: $(cat "$WORK/per-socket.err")"
read -r _ opened _ failed _ closed _ answered _ open _ max_ms _ p50_ms _ p99_ms <"$WORK/per-socket.out"
say "  $(cat "$WORK/per-socket.out")"
kill -0 "$NIMBUS_PID" 2>/dev/null || die "nimbus died during the per-socket phase"

say "phase: slowhttptest -B, $CONNECTIONS slow-body connections for $BODY_ATTACK_SECONDS s"
slowhttptest -B -c "$CONNECTIONS" -r "$CONNECTIONS" -i 2 -s 8192 -x 10 -p 3 -l "$BODY_ATTACK_SECONDS" -u "$BASE/healthz" \
  -g -o "$WORK/slowbody" >"$WORK/slowbody.out" 2>&1 &
ATTACK_PID=$!
sleep 2
probes "$WORK/probes-body.txt"
DURING_BODY=$(summary "$WORK/probes-body.txt")
say "  real clients during the slow-body attack: $DURING_BODY"
end_attack "$BODY_ATTACK_SECONDS"
kill -0 "$NIMBUS_PID" 2>/dev/null || die "nimbus died during the slow-body attack"
BODY_CSV=$WORK/slowbody.csv
[ -f "$BODY_CSV" ] || die "slowhttptest -B wrote no CSV; its output:$(printf '\n'; tail -20 "$WORK/slowbody.out")"
BODY_PEAK=$(peak_connected "$BODY_CSV")
BODY_CLOSED_AT=$(all_closed_at "$WORK/slowbody.out")
say "  slowhttptest -B: peak $BODY_PEAK open, none left open at second ${BODY_CLOSED_AT:-never}"

# ---------------------------------------------------------------- 4. report
LIMIT_MS=$(( (TIMEOUT + 1) * 1000 ))
verdict() { if [ "$1" = yes ]; then echo "ok"; else echo "FAIL"; fi; }
starved=no
[ "$(awk '{print $NF}' <<<"$DURING")" = 0 ] || starved=yes
closed_in_time=no
[ "$open" = 0 ] && [ "$max_ms" -le "$LIMIT_MS" ] && closed_in_time=yes
body_closed=no
[ -n "$BODY_CLOSED_AT" ] && [ "$BODY_CLOSED_AT" -le $((BODY_TIMEOUT + 3)) ] && body_closed=yes
[ "$(awk '{print $NF}' <<<"$DURING_BODY")" = 0 ] || starved=yes
printf '\nSlow-loris: %s slow-header connections, header timeout %s s, %s cores\n' "$CONNECTIONS" "$TIMEOUT" "$(nproc)"
printf '%-34s %s\n' "real clients alone (ms)" "$BASELINE"
printf '%-34s %s\n' "real clients under slowhttptest" "$DURING"
printf '%-34s peak %s open (ss: %s established), all open by second %s, every one closed by the server by second %s, probe unavailable %s times\n' \
  "slowhttptest -H -i 2" "$PEAK" "$SS_PEAK" "${FULL_AT:-never}" "${ALL_CLOSED_AT:-never (still open at the end)}" "$UNAVAILABLE"
printf '%-34s opened %s (failed %s), closed by the server %s (408: %s), left open %s; lifetime p50 %s ms, p99 %s ms, max %s ms (limit %s ms)\n' \
  "per-socket (slowloris.c)" "$opened" "$failed" "$closed" "$answered" "$open" "$p50_ms" "$p99_ms" "$max_ms" "$LIMIT_MS"
printf '%-34s %s\n' "real clients under slowhttptest -B" "$DURING_BODY"
printf '%-34s peak %s open, every one closed by the server by second %s (body timeout %s s; limit second %s)\n' \
  "slowhttptest -B -i 2 (slow body)" "$BODY_PEAK" "${BODY_CLOSED_AT:-never (still open at the end)}" "$BODY_TIMEOUT" $((BODY_TIMEOUT + 3))
printf '%-34s %s\n' "real clients not starved" "$(verdict "$([ "$starved" = no ] && echo yes || echo no)")"
printf '%-34s %s\n' "every attack socket closed in time" "$(verdict "$closed_in_time")"
printf '%-34s %s\n' "every slow body cut off in time" "$(verdict "$body_closed")"
[ "$starved" = no ] && [ "$closed_in_time" = yes ] && [ "$body_closed" = yes ] || exit 1
