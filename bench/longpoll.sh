#!/usr/bin/env bash
# Long-poll benchmark (issue 4, "Figures for the closing note"): memory per parked waiter, database
# connections held while parked, and wake latency from a write to the waiter's answer, on one
# instance and across two instances sharing one database.
#
#   bash bench/longpoll.sh
#
# 1. Installs what it needs (deploy/install-deps.sh: PostgreSQL server programs, curl), builds
#    nimbus in release mode, compiles bench/lpwait.c (C, one thread, epoll).
# 2. Starts one scratch PostgreSQL cluster (Unix socket only, temp dir; default durability), creates
#    BENCH_USERS users, each with a waiting device and a writing device, and their zones.
# 3. Memory: an instance M with --max-waiters BENCH_PARKED; after a warm-up cycle of 1,000, lpwait
#    parks BENCH_PARKED records/changes requests (wait 55, one connection each, every one on its
#    own zone, spread over the users) and holds them. RSS of nimbus before and while parked →
#    KB per parked waiter; while parked: /metrics nimbus_longpoll_waiters and nimbus_db_pool_in_use,
#    and the backends of the nimbus database in pg_stat_activity (total / active / idle in
#    transaction), and the CPU nimbus uses while they are parked. The clients then close: time until
#    the waiter gauge is 0. Further cycles (BENCH_CYCLES) show whether memory is reused.
#    For comparison, the same number of idle keep-alive connections on a fresh instance (one GET
#    /limits each, bench/holdconn.c): RSS delta per connection without a parked request.
# 4. Wake latency: instances A and B on the same database (B learns of A's writes by LISTEN/NOTIFY).
#    single  BENCH_WAITERS waiters parked (own zone each); BENCH_WRITES writes, one at a time, each
#            to one waiter's zone through A; the waiter's answer ends the sample; the waiter parks
#            again with its new token (so BENCH_WAITERS stay parked). Waiters on A (one instance),
#            then on B (two instances).
#    fanout  BENCH_WAITERS waiters on one zone of one user; each of BENCH_FANOUT_ROUNDS writes wakes
#            all of them (one sample per waiter). Waiters on A, then on B.
#    Two figures per sample: write-send→answer (from just before the write request is sent) and
#    write-ack→answer (from the write's own answer; the commit lies between the two).
# 5. A summary block with the targets: <= 5 KB per parked waiter, no database connection held by a
#    parked waiter, wake p99 <= 50 ms on one instance and <= 100 ms across two (judged on
#    write-send→answer of `single`; `fanout` is the thundering-herd worst case, for information).
#
# Knobs (environment): BENCH_PARKED=10000 BENCH_WAITERS=1000 BENCH_WRITES=1000 BENCH_FANOUT_ROUNDS=5
#   BENCH_USERS=25 BENCH_WARMUP=1000 BENCH_CYCLES=3 BENCH_SETTLE=2 BENCH_POOL_SIZE= BENCH_EVENT_LOOPS= (nimbus defaults)
#   BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1 BENCH_KEEP=1 (keep the temp dir)
#   BENCH_NIMBUS_BIN=path (measure that binary instead of building the release one)
# Loopback only; everything it starts is stopped by PID; the temp dir is removed.
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_PARKED=100 BENCH_WAITERS=20 BENCH_WRITES=20 BENCH_FANOUT_ROUNDS=1 BENCH_USERS=3 BENCH_WARMUP=20 BENCH_CYCLES=1 BENCH_SETTLE=1), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 120 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=longpoll
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 120 BENCH_PARKED=100 BENCH_WAITERS=20 BENCH_WRITES=20 BENCH_FANOUT_ROUNDS=1 BENCH_USERS=3 BENCH_WARMUP=20 BENCH_CYCLES=1 BENCH_SETTLE=1 -- "$@"
ROOT=$PWD

PARKED=${BENCH_PARKED:-10000}
WAITERS=${BENCH_WAITERS:-1000}
WRITES=${BENCH_WRITES:-1000}
FANOUT_ROUNDS=${BENCH_FANOUT_ROUNDS:-5}
USERS=${BENCH_USERS:-25}
WARMUP=${BENCH_WARMUP:-1000}
CYCLES=${BENCH_CYCLES:-3}
SETTLE=${BENCH_SETTLE:-2}
POOL_SIZE=${BENCH_POOL_SIZE:-}
EVENT_LOOPS=${BENCH_EVENT_LOOPS:-}
CONTAINER=iCloud.bench.LongPoll
CHANGES_PATH=/database/1/$CONTAINER/development/private/records/changes
MODIFY_PATH=/database/1/$CONTAINER/development/private/records/modify

T0=$(date +%s)

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" PG_BIN="" PG_DATA="" SERVER_PIDS=() HOLD_PID="" HOLD_FD=""
stop_own_processes() {
  local pid
  [ -n "$HOLD_FD" ] && eval "exec $HOLD_FD>&-"
  stop_pid "$HOLD_PID" TERM 5
  for pid in "${SERVER_PIDS[@]}"; do stop_pid "$pid" TERM 30; done
}
on_exit_stop stop_own_processes

# ---------------------------------------------------------------- 1. dependencies and build
if [ -z "${BENCH_SKIP_INSTALL:-}" ]; then
  bash deploy/install-deps.sh
fi
pg_find_bin || die "PostgreSQL server programs not found (deploy/install-deps.sh)"
command -v curl >/dev/null || die "curl is not installed"

if [ -n "${BENCH_NIMBUS_BIN:-}" ]; then
  NIMBUS_BIN=$BENCH_NIMBUS_BIN BENCH_SKIP_BUILD=1
else
  if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
    say "building nimbus (release)"
    swift build -c release --product nimbus >&2 || die "release build failed (swift build -c release --product nimbus)"
  fi
  NIMBUS_BIN="$(swift build -c release --show-bin-path)/nimbus"
fi
[ -x "$NIMBUS_BIN" ] || die "no release binary at $NIMBUS_BIN"
rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
[ -z "$(git -C "$ROOT" status --porcelain -- Sources Package.swift migrations 2>/dev/null)" ] || rev+=" + uncommitted changes in Sources/migrations"
rev+=", binary $NIMBUS_BIN of $(date -r "$NIMBUS_BIN" '+%F %T')"
[ -n "${BENCH_SKIP_BUILD:-}" ] && rev+=" (build skipped)"

WORK=$(mktemp -d /tmp/nimbus-longpoll-bench.XXXXXX)
chmod 755 "$WORK"
compile_c "$WORK/lpwait" bench/lpwait.c
compile_c "$WORK/holdconn" bench/holdconn.c
LPWAIT=$WORK/lpwait HOLDCONN=$WORK/holdconn

# Descriptors for BENCH_PARKED connections on both sides (children inherit this).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
[ "$NOFILE" = unlimited ] && NOFILE=1048576
((NOFILE >= PARKED + 512)) || die "only $NOFILE file descriptors allowed; $PARKED waiters need $((PARKED + 512)) (raise ulimit -Hn or lower BENCH_PARKED)"

# ---------------------------------------------------------------- 2. PostgreSQL, users, zones
start_bench_postgres max_connections=200
psql -d postgres -c 'CREATE DATABASE nimbus' >/dev/null
DB_URL="postgresql:///nimbus?host=$SOCK&user=nimbus"
admin migrate >"$WORK/migrate.out" 2>&1 || { cat "$WORK/migrate.out" >&2; die "nimbus migrate failed"; }

say "creating $USERS users with a waiting and a writing device each"
WAIT_TOKENS=() WRITE_TOKENS=()
for ((u = 0; u < USERS; u++)); do
  admin user add "lp$u" >/dev/null 2>"$WORK/admin.err" || { cat "$WORK/admin.err" >&2; die "nimbus user add lp$u failed"; }
  WAIT_TOKENS[u]=$(admin token issue "lp$u" --device waiter 2>>"$WORK/admin.err" | awk '/^token:/ {print $2}')
  WRITE_TOKENS[u]=$(admin token issue "lp$u" --device writer 2>>"$WORK/admin.err" | awk '/^token:/ {print $2}')
  [ -n "${WAIT_TOKENS[u]}" ] && [ -n "${WRITE_TOKENS[u]}" ] || { cat "$WORK/admin.err" >&2; die "nimbus token issue for lp$u failed"; }
done

# ---------------------------------------------------------------- helpers
rss_kb() { awk '/^VmRSS:/ {print $2; exit}' "/proc/$1/status" 2>/dev/null || echo 0; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}' || echo 0; }
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
metric() { curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n && !found {print $2; found = 1}'; }  # reads to the end: an awk that exits early makes curl fail (23) under pipefail
wait_gauge() {  # wait_gauge PORT VALUE SECONDS: polls nimbus_longpoll_waiters; echoes ms taken, or "timeout (last V)"
  local port=$1 want=$2 secs=$3 start v
  start=$(date +%s%N)
  while :; do
    v=$(metric "$port" nimbus_longpoll_waiters)
    [ "$v" = "$want" ] && { echo $(( ($(date +%s%N) - start) / 1000000 )); return 0; }
    (( ($(date +%s%N) - start) / 1000000000 >= secs )) && { echo "timeout (last $v)"; return 1; }
    sleep 0.02
  done
}
# start_server NAME ARGS...: nimbus serve on a free port; sets <NAME>_PID and <NAME>_PORT.
start_server() {
  local name=$1 pid port="" i; shift
  "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url "$DB_URL" --data-dir "$WORK/data-$name" --requests-per-second-per-token 0 \
    ${POOL_SIZE:+--pool-size "$POOL_SIZE"} ${EVENT_LOOPS:+--event-loops "$EVENT_LOOPS"} "$@" </dev/null >"$WORK/nimbus-$name.log" 2>&1 &
  pid=$!
  SERVER_PIDS+=("$pid")
  for ((i = 0; i < 600; i++)); do
    port=$(grep -a -o 'listening on http://[0-9.]*:[0-9]*' "$WORK/nimbus-$name.log" 2>/dev/null | head -1 | sed 's/.*://' || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || die "nimbus $name exited; log tail:$(printf '\n'; tail -20 "$WORK/nimbus-$name.log")"
    sleep 0.1
  done
  [ -n "$port" ] || die "nimbus $name did not listen within 60 s"
  printf -v "${name}_PID" '%s' "$pid"
  printf -v "${name}_PORT" '%s' "$port"
  say "nimbus $name: pid $pid, port $port"
}
# create_zones PORT PREFIX PER_USER: zones PREFIX0..PREFIX<PER_USER-1> for every user (400 a request).
create_zones() {
  local port=$1 prefix=$2 per=$3 u z ops n code
  for ((u = 0; u < USERS; u++)); do
    for ((z = 0; z < per; z += 400)); do
      ops=""
      for ((n = z; n < per && n < z + 400; n++)); do ops+="${ops:+,}{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"$prefix$n\"}}}"; done
      code=$(curl -sS -o "$WORK/zones.json" -w '%{http_code}' --max-time 60 -H "Authorization: Bearer ${WRITE_TOKENS[u]}" \
        -H 'Content-Type: application/json' --data "{\"operations\":[$ops]}" "http://127.0.0.1:$port/database/1/$CONTAINER/development/private/zones/modify") \
        || die "zones/modify failed"
      [ "$code" = 200 ] && ! grep -q serverErrorCode "$WORK/zones.json" || die "zones/modify: HTTP $code $(head -c 300 "$WORK/zones.json")"
    done
  done
}
# waiter_lines COUNT PREFIX FILE: waiter i on zone PREFIX<i / USERS> of user i % USERS.
waiter_lines() {
  local i
  for ((i = 0; i < $1; i++)); do
    printf '%s %s %s%d\n' "${WAIT_TOKENS[i % USERS]}" "${WRITE_TOKENS[i % USERS]}" "$2" "$((i / USERS))"
  done >"$3"
}
# fanout_lines COUNT ZONE FILE: every waiter on one zone of user 0.
fanout_lines() {
  local i
  for ((i = 0; i < $1; i++)); do printf '%s %s %s\n' "${WAIT_TOKENS[0]}" "${WRITE_TOKENS[0]}" "$2"; done >"$3"
}
# pg_backends: "total active idle_in_transaction" backends connected to the nimbus database.
pg_backends() {
  psql -d postgres -At -F' ' -c "SELECT count(*), count(*) FILTER (WHERE state = 'active'),
    count(*) FILTER (WHERE state LIKE 'idle in transaction%') FROM pg_stat_activity WHERE datname = 'nimbus' AND pid <> pg_backend_pid()"
}
# hold_start PORT FILE NAME: lpwait park in the background, controlled through a FIFO; waits for `ready`.
hold_start() {
  local port=$1 file=$2 name=$3 i
  rm -f "$WORK/hold.ctl"; mkfifo "$WORK/hold.ctl"
  "$LPWAIT" park 127.0.0.1 "$port" "$file" "$CHANGES_PATH" <"$WORK/hold.ctl" >"$WORK/hold-$name.out" 2>"$WORK/hold-$name.err" &
  HOLD_PID=$!
  exec {HOLD_FD}>"$WORK/hold.ctl"
  for ((i = 0; i < 3000; i++)); do
    grep -q '^ready' "$WORK/hold-$name.out" 2>/dev/null && break
    kill -0 "$HOLD_PID" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^ready' "$WORK/hold-$name.out" || { cat "$WORK/hold-$name.err" >&2; die "lpwait park ($name) did not get ready"; }
  [ -s "$WORK/hold-$name.err" ] && say "$name: lpwait: $(head -3 "$WORK/hold-$name.err" | tr '\n' ' ')"
  return 0
}
# hold_stop NAME: tells lpwait to report and close every connection.
hold_stop() {
  echo quit >&"$HOLD_FD"
  exec {HOLD_FD}>&-
  HOLD_FD=""
  wait "$HOLD_PID" || say "lpwait park ($1) exited with $?"
  HOLD_PID=""
}
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i + 1); exit}}' <<<"$1"; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- 3. memory per parked waiter
PER_USER_PARKED=$(( (PARKED + USERS - 1) / USERS ))
start_server M --max-waiters "$PARKED" --max-waiters-per-device "$PARKED" --max-connections $((PARKED + 500))
say "creating $PER_USER_PARKED zones for each of $USERS users"
create_zones "$M_PORT" m "$PER_USER_PARKED"
POOL_MAX=$(metric "$M_PORT" nimbus_db_pool_max)

if ((WARMUP > 0)); then
  say "warm-up: $WARMUP waiters parked and released"
  waiter_lines "$WARMUP" m "$WORK/warm.lines"
  hold_start "$M_PORT" "$WORK/warm.lines" warm
  hold_stop warm
  wait_gauge "$M_PORT" 0 30 >/dev/null || say "warm-up waiters did not all go away"
fi
waiter_lines "$PARKED" m "$WORK/parked.lines"
mem_cycle() {  # mem_cycle N: one park/hold/release cycle; sets mem<N>_* variables
  local n=$1 before during after out gauge pool backends release_ms cpu0 cpu1
  sleep 1
  before=$(rss_kb "$M_PID")
  say "cycle $n: parking $PARKED records/changes wait=55 requests (RSS before: $before KB)"
  hold_start "$M_PORT" "$WORK/parked.lines" "mem$n"
  cpu0=$(cpu_ticks "$M_PID")
  sleep "$SETTLE"
  cpu1=$(cpu_ticks "$M_PID")
  during=$(rss_kb "$M_PID")
  gauge=$(metric "$M_PORT" nimbus_longpoll_waiters)
  pool=$(metric "$M_PORT" nimbus_db_pool_in_use)
  open=$(metric "$M_PORT" nimbus_http_open_connections)
  backends=$(pg_backends)
  hold_stop "mem$n"
  release_ms=$(wait_gauge "$M_PORT" 0 60) || true
  sleep 1
  after=$(rss_kb "$M_PID")
  out=$(cat "$WORK/hold-mem$n.out")
  eval "mem${n}_before=$before mem${n}_during=$during mem${n}_after=$after mem${n}_gauge=\${gauge:-?} mem${n}_pool=\${pool:-?}"
  eval "mem${n}_open=\${open:-?} mem${n}_backends='$backends' mem${n}_release='$release_ms'"
  eval "mem${n}_idle_cpu=$(awk -v t=$((cpu1 - cpu0)) -v hz="$CLK_TCK" -v s="$SETTLE" 'BEGIN {printf "%.1f", t / hz / s * 100}')"
  eval "mem${n}_parked=$(field "$out" parked) mem${n}_failed=$(field "$out" failed) mem${n}_non200=$(field "$out" non200)"
  eval "mem${n}_park_ms=$(field "$out" ms) mem${n}_held=$(field "$(grep '^held' <<<"$out")" held)"
  eval "mem${n}_early=$(field "$(grep '^held' <<<"$out")" answered)"
  eval "mem${n}_kb=$(awk -v a="$during" -v b="$before" -v n="$(field "$out" parked)" 'BEGIN {printf "%.2f", (n > 0 ? (a - b) / n : 0)}')"
  say "cycle $n: RSS $before -> $during KB with $(field "$out" parked) parked ($(eval echo \$mem${n}_kb) KB each) -> $after KB after release;" \
      "gauge $gauge, pool in use $pool, backends (total active idle-in-tx) $backends; released in $release_ms ms"
}
for ((cycle = 1; cycle <= CYCLES; cycle++)); do mem_cycle "$cycle"; done
mem_peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$M_PID/status")
mem_threads=$(awk '/^Threads:/ {print $2}' "/proc/$M_PID/status")
stop_pid "$M_PID" TERM 30

# For comparison: the same number of idle keep-alive connections (one GET /limits each,
# bench/holdconn.c) on a fresh instance: what a connection costs without a parked request.
start_server I --max-connections $((PARKED + 500))
idle_hold() {  # idle_hold COUNT SECONDS: holdconn in the background until `ready`; sets IDLE_OUT
  local i
  "$HOLDCONN" hold 127.0.0.1 "$I_PORT" "$1" "$2" /limits >"$WORK/idle.out" 2>"$WORK/idle.err" &
  HOLD_PID=$!
  for ((i = 0; i < 1200; i++)); do grep -q '^ready' "$WORK/idle.out" 2>/dev/null && break; kill -0 "$HOLD_PID" 2>/dev/null || break; sleep 0.1; done
  grep -q '^ready' "$WORK/idle.out" || { cat "$WORK/idle.err" >&2; die "holdconn did not get ready"; }
}
if ((WARMUP > 0)); then idle_hold "$WARMUP" 1; wait "$HOLD_PID" || true; HOLD_PID=""; fi
sleep 1
idle_before=$(rss_kb "$I_PID")
say "idle: holding $PARKED keep-alive connections (RSS before: $idle_before KB)"
idle_hold "$PARKED" $((SETTLE + 3))
sleep "$SETTLE"
idle_during=$(rss_kb "$I_PID")
wait "$HOLD_PID" || true
HOLD_PID=""
idle_opened=$(awk '/^opened/ {print $2}' "$WORK/idle.out")
idle_kb=$(awk -v a="$idle_during" -v b="$idle_before" -v n="${idle_opened:-0}" 'BEGIN {printf "%.2f", (n > 0 ? (a - b) / n : 0)}')
say "idle: RSS $idle_before -> $idle_during KB with ${idle_opened:-0} idle connections ($idle_kb KB each)"
stop_pid "$I_PID" TERM 30

# ---------------------------------------------------------------- 4. wake latency
start_server A --max-waiters-per-device "$WAITERS"
start_server B --max-waiters-per-device "$WAITERS"
PER_USER_WAITERS=$(( (WAITERS + USERS - 1) / USERS ))
create_zones "$A_PORT" a "$PER_USER_WAITERS"
create_zones "$A_PORT" b "$PER_USER_WAITERS"
create_zones "$A_PORT" fan 2
# wake_run NAME WAIT_PORT MODE LINES COUNT: lpwait wake; sets <NAME>_* variables.
wake_run() {
  local name=$1 port=$2 mode=$3 file=$4 count=$5 out cpu0 cpu1 wall0 wall1 pids p
  local unit=writes; [ "$mode" = fanout ] && unit=rounds
  say "$name: $mode, $(wc -l <"$file") waiters on port $port, writes through A (port $A_PORT), $count $unit"
  cpu0=0; for p in "$A_PID" "$B_PID"; do cpu0=$((cpu0 + $(cpu_ticks "$p"))); done
  wall0=$(date +%s%N)
  "$LPWAIT" wake 127.0.0.1 "$port" 127.0.0.1 "$A_PORT" "$file" "$CHANGES_PATH" "$MODIFY_PATH" "$mode" "$count" \
    >"$WORK/wake-$name.out" 2>"$WORK/wake-$name.err" || say "$name: lpwait exited with $?"
  wall1=$(date +%s%N)
  cpu1=0; for p in "$A_PID" "$B_PID"; do cpu1=$((cpu1 + $(cpu_ticks "$p"))); done
  out=$(cat "$WORK/wake-$name.out")
  [ -s "$WORK/wake-$name.err" ] && say "$name: lpwait: $(head -4 "$WORK/wake-$name.err" | tr '\n' ' ')"
  grep -q '^samples' <<<"$out" || die "$name: lpwait printed no samples: $out $(head -5 "$WORK/wake-$name.err")"
  local s send ack
  s=$(grep '^samples' <<<"$out"); send=$(grep '^send' <<<"$out"); ack=$(grep '^ack' <<<"$out")
  eval "${name}_parked=$(field "$(grep '^parked' <<<"$out")" parked) ${name}_samples=$(field "$s" samples)"
  eval "${name}_wrong=$(field "$s" wrong) ${name}_other=$(field "$s" other) ${name}_timeouts=$(field "$s" timeouts) ${name}_errors=$(field "$s" errors)"
  eval "${name}_ms=$(field "$s" ms)"
  for k in p50 p90 p99 max; do eval "${name}_send_$k=$(field "$send" $k) ${name}_ack_$k=$(field "$ack" $k)"; done
  eval "${name}_cpu_ms=$(( (cpu1 - cpu0) * 1000 / CLK_TCK ))"
  say "$name: $(tr '\n' ';' <<<"$out")"
}
waiter_lines "$WAITERS" a "$WORK/single-a.lines"
waiter_lines "$WAITERS" b "$WORK/single-b.lines"
fanout_lines "$WAITERS" fan0 "$WORK/fanout-a.lines"
fanout_lines "$WAITERS" fan1 "$WORK/fanout-b.lines"
wake_run one "$A_PORT" single "$WORK/single-a.lines" "$WRITES"
wait_gauge "$A_PORT" 0 30 >/dev/null || say "waiters left on A after the one-instance run"
wake_run two "$B_PORT" single "$WORK/single-b.lines" "$WRITES"
wait_gauge "$B_PORT" 0 30 >/dev/null || say "waiters left on B after the two-instance run"
wake_run fan1 "$A_PORT" fanout "$WORK/fanout-a.lines" "$FANOUT_ROUNDS"
wait_gauge "$A_PORT" 0 30 >/dev/null || true
wake_run fan2 "$B_PORT" fanout "$WORK/fanout-b.lines" "$FANOUT_ROUNDS"
wait_gauge "$B_PORT" 0 30 >/dev/null || true

problem_pattern='^(warning|error) |"level":"(warning|error)"|Fatal error|panic|Segmentation fault|Illegal instruction'
log_problems=$(cat "$WORK"/nimbus-*.log | grep -a -m 6 -E "$problem_pattern" | cut -c1-240 || true)
log_problem_count=$(cat "$WORK"/nimbus-*.log | grep -a -c -E "$problem_pattern" || true)
stop_status=""
for name in A B; do
  pid_var=${name}_PID
  t=$(date +%s%N)
  kill -TERM "${!pid_var}"
  rc=0; wait "${!pid_var}" || rc=$?
  stop_status+="$name exit $rc in $(( ($(date +%s%N) - t) / 1000000 )) ms; "
done
SERVER_PIDS=()
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- 5. report
set +e +o pipefail
verdict() { if awk "BEGIN {exit !($1)}"; then echo ok; else echo MISSED; fi; }
latency_row() {  # latency_row NAME LABEL
  local n=$1 v
  printf '  %-34s' "$2"
  for v in send_p50 send_p90 send_p99 send_max ack_p50 ack_p99; do eval "printf ' %9s' \"\${${n}_$v}\""; done
  eval "printf ' %8s %6s %s\n' \"\${${n}_samples}\" \"\${${n}_cpu_ms}\" \"wrong \${${n}_wrong} other \${${n}_other} timeouts \${${n}_timeouts} errors \${${n}_errors}\""
}
{
  echo
  echo "================ Nimbus long-poll benchmark summary ================"
  echo "machine: $(nproc) cores, kernel $(uname -r); load average before $load_before, after $load_after"
  echo "nimbus build: $rev; PostgreSQL $PG_VERSION (scratch cluster, Unix socket); pool max $POOL_MAX;" \
       "event loops ${EVENT_LOOPS:-default}; threads $mem_threads"
  echo "memory: $PARKED parked records/changes wait=55 requests (lpwait: one connection each, own zone each, $USERS users), held ${SETTLE}s"
  printf '  %-7s %10s %10s %10s %10s %8s %7s %8s %12s %12s\n' cycle before_KB parked_KB after_KB KB/waiter parked failed park_ms released_ms cpu%_parked
  for ((n = 1; n <= CYCLES; n++)); do
    eval "printf '  %-7s %10s %10s %10s %10s %8s %7s %8s %12s %12s\n' $n \$mem${n}_before \$mem${n}_during \$mem${n}_after \$mem${n}_kb \$mem${n}_parked \"\$mem${n}_failed+\$mem${n}_non200\" \$mem${n}_park_ms \"\$mem${n}_release\" \$mem${n}_idle_cpu"
  done
  last=mem${CYCLES}_after
  echo "  KB per parked waiter: $mem1_kb (target <= 5: $(verdict "$mem1_kb <= 5")); later cycles: $(for ((n = 2; n <= CYCLES; n++)); do eval "printf '%s ' \$mem${n}_kb"; done)KB;" \
       "RSS after $CYCLES cycles ${!last} KB (peak $mem_peak KB)"
  echo "  for comparison, an idle keep-alive connection (fresh instance, $idle_opened held after one GET /limits): $idle_kb KB" \
       "($idle_before -> $idle_during KB); so the parked request itself adds about $(awk -v a="$mem1_kb" -v b="$idle_kb" 'BEGIN {printf "%.2f", a - b}') KB"
  echo "  while parked (cycle 1): nimbus_longpoll_waiters $mem1_gauge, open connections $mem1_open;" \
       "answered early (before release): $mem1_early; nimbus CPU while parked ${mem1_idle_cpu}% of a core"
  set -- $mem1_backends
  pools=$(for ((n = 1; n <= CYCLES; n++)); do eval "printf '%s ' \$mem${n}_pool"; done)
  echo "  database while parked: nimbus_db_pool_in_use per cycle: ${pools}(target 0: $(verdict "\"$(echo $pools | tr -d ' 0')\" == \"\""));" \
       "backends of db nimbus (cycle 1): $1 total, $2 active, $3 idle in transaction — pool max $POOL_MAX + 1 LISTEN"
  echo "wake latency, ms (send: from just before the write request is sent; ack: from the write's answer); server CPU ms of A+B during the run"
  printf '  %-34s %9s %9s %9s %9s %9s %9s %8s %6s %s\n' run send_p50 send_p90 send_p99 send_max ack_p50 ack_p99 samples cpu_ms checks
  latency_row one "single, waiters on A, writes on A"
  latency_row two "single, waiters on B, writes on A"
  latency_row fan1 "fanout, waiters on A, writes on A"
  latency_row fan2 "fanout, waiters on B, writes on A"
  echo "  (single: $WAITERS waiters parked, each write wakes one; fanout: $WAITERS waiters on one zone, $FANOUT_ROUNDS writes each wake all)"
  echo "  one instance  p99 send→answer: $one_send_p99 ms (target <= 50: $(verdict "$one_send_p99 <= 50")); ack→answer p99 $one_ack_p99 ms"
  echo "  two instances p99 send→answer: $two_send_p99 ms (target <= 100: $(verdict "$two_send_p99 <= 100")); ack→answer p99 $two_ack_p99 ms"
  echo "  fan-out of $WAITERS (information): p99 send→answer $fan1_send_p99 ms on one instance, $fan2_send_p99 ms across two"
  echo "shutdown: $stop_status"
  if [ "${log_problem_count:-0}" -gt 0 ]; then
    echo "nimbus log warnings/errors: $log_problem_count; first ones:"
    printf '%s\n' "$log_problems" | sed 's/^/  /'
  else
    echo "nimbus log warnings/errors: none"
  fi
  echo "took $(( $(date +%s) - T0 )) s"
  echo "===================================================================="
}
