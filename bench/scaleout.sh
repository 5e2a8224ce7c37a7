#!/usr/bin/env bash
# Scale-out benchmark ("Figures for the closing note"): record writes and change pages through
# nginx to one instance and to two instances on ONE PostgreSQL, directly and through PgBouncer in
# transaction mode, against clients talking to one instance directly; the wake latency of a
# long-poll through nginx with two instances; the CPU each process uses per request and what two
# instances would serve on a machine where PostgreSQL has cores of its own.
#
#   bash bench/scaleout.sh
#
# 1. Installs what it needs (deploy/install-deps.sh nginx pgbouncer openssl), builds nimbus in
#    release mode, compiles bench/recload.c and bench/lpwait.c. Starts one scratch PostgreSQL
#    (Unix socket only, temp dir, fsync and synchronous_commit on, as bench/records.sh), one
#    database, a user with a load token and waiter tokens, 32 zones for writes and a zone preloaded
#    with BENCH_PRELOAD records (records/modify, 100 per request) for change pages.
# 2. Proxies, each from the shipped file, templated mechanically (ports, upstream lines, paths, as
#    Tests/integration/proxies.sh and scenario 20 do): two nginx servers from deploy/nginx.conf
#    (one over instance 1, one over instances 1 and 2; the shipped TLS listener with a self-signed
#    certificate plus a plain-HTTP listener on loopback, because the load generators speak plain
#    HTTP), and PgBouncer from deploy/pgbouncer.ini (auth trust, run as the cluster's user).
# 3. Configurations, each measured for
#      writes   records/modify, 1 record per request (`create`, ~300-byte AppEvent), spread over 32 zones
#      changes  records/changes, resultsLimit 200, each client paging through the preloaded zone
#    with BENCH_CLIENTS keep-alive clients (bench/recload.c) for BENCH_SECONDS, CHECKPOINT before
#    every run, rounds interleaved (a b c d, then d c b a, ...); figures are medians over rounds:
#      a  direct        clients -> instance 1                     (the reference of the ratios)
#      b  nginx-1       clients -> nginx -> instance 1
#      c  nginx-2       clients -> nginx -> instances 1 and 2 (same database)
#      d  nginx-2-pgb   clients -> nginx -> instances 1 and 2 -> PgBouncer (transaction pooling;
#                       --database-pooler transaction, LISTEN over --listen-database-url direct)
#    Instances are (re)started as a configuration needs them, on fixed loopback ports, with
#    --requests-per-second-per-token 0, --trusted-proxy 127.0.0.1/32 and --prune-interval 0s (no
#    pruning job in the middle of a run), and warmed up for BENCH_WARMUP seconds after each start.
#    CPU from /proc/<pid>/stat ticks over each run: nimbus (sum over the running instances),
#    postgres (postmaster with its reaped children + live children), nginx (both masters with
#    their workers; the idle one costs nothing), pgbouncer, the load generator (its own rusage),
#    and everything else on the machine (/proc/stat busy minus those; runs where that exceeds 0.3
#    cores, other people's work on a shared box, are named in the summary). Also per run: write
#    transactions (transaction ids taken) and WAL bytes, so requests per commit and commits/s:
#    Nimbus shares one statement and commit among concurrent creates of an instance.
# 4. Wake latency through nginx with two instances (config c): BENCH_WAKE_WAITERS waiters
#    (bench/lpwait.c, own zone each, wait 55 as lpwait sends it) long-poll records/changes through
#    nginx, which spreads them over both instances; a writer writes directly to instance 1
#    (BENCH_WAKE_WRITES writes, one at a time, each waking one waiter), then to instance 2; a
#    sample is write-sent -> waiter's answer received (and write-acked -> answer).
# 5. A summary: per configuration and workload requests/s, records/s, p50/p99, ratio to (a), CPU
#    seconds per 1,000 requests per process and the CPU split (share of the machine's busy CPU),
#    wake p50/p99, PostgreSQL deadlocks and log problems, and the estimate, from the CPU per request measured in c and d, of what N
#    instances would serve with PostgreSQL on cores of its own: min(N x cores per instance / nimbus
#    CPU per request, PostgreSQL cores / postgres CPU per request) (CPU only; see the assumptions
#    printed with it).
#
# Knobs (environment): BENCH_SECONDS=8 BENCH_ROUNDS=2 BENCH_CLIENTS=16 BENCH_PRELOAD=20000
#   BENCH_WARMUP=2 BENCH_WAKE_WAITERS=8 BENCH_WAKE_WRITES=100 (per writing instance)
#   BENCH_NGINX_WORKERS=auto BENCH_CONFIGS="a b c d" BENCH_POOL_SIZE= BENCH_EVENT_LOOPS= (nimbus defaults)
#   BENCH_EST_INSTANCES=2 BENCH_EST_NIMBUS_CORES=2 (per instance) BENCH_EST_PG_CORES=4 (the example machine)
#   BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1 BENCH_NIMBUS_BIN=path BENCH_KEEP=1 (keep the temp dir)
# Loopback only; every load is bounded in time; everything it starts is stopped by PID.
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_SECONDS=1 BENCH_ROUNDS=1 BENCH_CLIENTS=2 BENCH_PRELOAD=400 BENCH_WARMUP=1 BENCH_WAKE_WAITERS=2 BENCH_WAKE_WRITES=5 BENCH_NGINX_WORKERS=1), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 150 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=scaleout
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 150 BENCH_SECONDS=1 BENCH_ROUNDS=1 BENCH_CLIENTS=2 BENCH_PRELOAD=400 BENCH_WARMUP=1 BENCH_WAKE_WAITERS=2 BENCH_WAKE_WRITES=5 BENCH_NGINX_WORKERS=1 -- "$@"
ROOT=$PWD

SECS=${BENCH_SECONDS:-8}
ROUNDS=${BENCH_ROUNDS:-2}
CLIENTS=${BENCH_CLIENTS:-16}
PRELOAD=${BENCH_PRELOAD:-20000}
WARMUP=${BENCH_WARMUP:-2}
WAKE_WAITERS=${BENCH_WAKE_WAITERS:-8}
WAKE_WRITES=${BENCH_WAKE_WRITES:-100}
NGINX_WORKERS=${BENCH_NGINX_WORKERS:-auto}
CONFIGS=${BENCH_CONFIGS:-a b c d}
POOL_SIZE=${BENCH_POOL_SIZE:-}
EVENT_LOOPS=${BENCH_EVENT_LOOPS:-}
EST_INSTANCES=${BENCH_EST_INSTANCES:-2}
EST_NIMBUS_CORES=${BENCH_EST_NIMBUS_CORES:-2}
EST_PG_CORES=${BENCH_EST_PG_CORES:-4}
CONTAINER=iCloud.bench.Scaleout
API=/database/1/$CONTAINER/development/private
WRITE_ZONES=$(seq -f 'm%g' 0 31 | paste -sd,)
FEED_ZONE=feed

T0=$(date +%s)

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" PG_BIN="" PG_DATA="" NGINX1_PID="" NGINX2_PID="" PGB_RUNAS_PID="" PGB_PID=""
INST_PID=("" "" "") INST_MODE=(none none none)
stop_own_processes() {
  stop_pid "${INST_PID[1]}" TERM 30
  stop_pid "${INST_PID[2]}" TERM 30
  stop_pid "$NGINX1_PID" TERM 10
  stop_pid "$NGINX2_PID" TERM 10
  # PgBouncer runs under runuser (it refuses root): the pgbouncer process itself first, then runuser.
  stop_pid "$PGB_PID" TERM 10
  stop_pid "$PGB_RUNAS_PID" TERM 10
}
on_exit_stop stop_own_processes

# ---------------------------------------------------------------- 1. dependencies and build
if [ -z "${BENCH_SKIP_INSTALL:-}" ]; then
  bash deploy/install-deps.sh nginx pgbouncer openssl
fi
pg_find_bin || die "PostgreSQL server programs not found (deploy/install-deps.sh)"
NGINX=$(find_tool nginx) || die "nginx is not installed (apt-get install nginx)"
PGBOUNCER=$(find_tool pgbouncer) || die "pgbouncer is not installed (apt-get install pgbouncer)"
command -v openssl >/dev/null || die "openssl is not installed"
command -v curl >/dev/null || die "curl is not installed"
release_binary
rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
[ -z "$(git -C "$ROOT" status --porcelain -- Sources Package.swift migrations 2>/dev/null)" ] || rev+=" + uncommitted changes in Sources/migrations"
rev+=", binary of $(date -r "$NIMBUS_BIN" '+%F %T')"
[ -n "${BENCH_SKIP_BUILD:-}${BENCH_NIMBUS_BIN:-}" ] && rev+=" (build skipped)"
versions="nginx $("$NGINX" -v 2>&1 | sed 's#.*/##'), pgbouncer $("$PGBOUNCER" --version 2>/dev/null | awk 'NR == 1 {print $2}')"

WORK=$(mktemp -d /tmp/nimbus-scaleout-bench.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/runs"
compile_c "$WORK/recload" bench/recload.c -pthread
compile_c "$WORK/lpwait" bench/lpwait.c
RECLOAD=$WORK/recload LPWAIT=$WORK/lpwait
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# ---------------------------------------------------------------- 2. PostgreSQL, users, tokens
start_bench_postgres max_connections=200 fsync=on synchronous_commit=on
psql -d postgres -c 'CREATE DATABASE nimbus' >/dev/null
DB_URL="postgresql:///nimbus?host=$SOCK&user=nimbus"
admin migrate >"$WORK/migrate.out" 2>&1 || { cat "$WORK/migrate.out" >&2; die "nimbus migrate failed"; }
admin user add bench >"$WORK/admin.out" 2>&1 || { cat "$WORK/admin.out" >&2; die "nimbus user add failed"; }
issue_token() { admin token issue bench --device "$1" 2>>"$WORK/admin.out" | awk '/^token:/ {print $2}'; }
TOKEN=$(issue_token loadgen)
[ -n "$TOKEN" ] || { cat "$WORK/admin.out" >&2; die "nimbus token issue failed"; }
# lpwait lines: WAITER_TOKEN WRITER_TOKEN ZONE. Four waiters per waiting device (maxWaitersPerDevice is 8).
WAIT_TOKENS=()
for ((i = 0; i < (WAKE_WAITERS + 3) / 4; i++)); do
  WAIT_TOKENS[i]=$(issue_token "waiter$i")
  [ -n "${WAIT_TOKENS[i]}" ] || { cat "$WORK/admin.out" >&2; die "nimbus token issue waiter$i failed"; }
done
PG_SETTINGS=$(psql -d postgres -At -F= -c "SELECT name, setting FROM pg_settings WHERE name IN
  ('fsync','synchronous_commit','shared_buffers','max_connections') ORDER BY name" | paste -sd' ')

# ---------------------------------------------------------------- ports
# free_port: an unused TCP port of 127.0.0.1 (20000..32767, below Linux's ephemeral range), as in
# Tests/integration/proxies.sh; never one this script picked already.
PICKED=" "
free_port() {
  local port hex tries=0
  while [ "$tries" -lt 200 ]; do
    tries=$((tries + 1))
    port=$(( 20000 + RANDOM % 12768 ))
    printf -v hex ':%04X ' "$port"
    case $PICKED in *" $port "*) continue ;; esac
    if ! grep -q "$hex" < <(cut -c1-60 /proc/net/tcp /proc/net/tcp6 2>/dev/null); then
      PICKED+="$port "
      echo "$port"
      return 0
    fi
  done
  die "no free TCP port found"
}
INST_PORT=("" "$(free_port)" "$(free_port)")
NGINX1_TLS=$(free_port) NGINX1_PORT=$(free_port) NGINX2_TLS=$(free_port) NGINX2_PORT=$(free_port) PGB_PORT=$(free_port)
wait_listening() {  # wait_listening PORT PID WHAT LOG: up to 10 s
  local port=$1 pid=$2 i
  for ((i = 0; i < 200; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || die "$3 exited before listening on port $port: $(tail -5 "$4" 2>/dev/null)"
    sleep 0.05
  done
  die "$3 does not listen on 127.0.0.1:$port after 10 s: $(tail -5 "$4" 2>/dev/null)"
}

# ---------------------------------------------------------------- PgBouncer (deploy/pgbouncer.ini)
# Templated only for the socket directory, port, auth (the scratch cluster trusts local
# connections; the auth file still names the user), log and pid file, as scenario 20 does.
PGB_DIR=$WORK/pgbouncer
mkdir -p "$PGB_DIR"
printf '"nimbus" ""\n' >"$PGB_DIR/userlist.txt"
sed -e "s#^nimbus = host=/var/run/postgresql port=5432 dbname=nimbus #nimbus = host=$SOCK port=5432 dbname=nimbus #" \
    -e "s#^listen_port = 6432#listen_port = $PGB_PORT#" \
    -e "s#^auth_type = scram-sha-256#auth_type = trust#" \
    -e "s#^auth_file = /etc/pgbouncer/userlist.txt#auth_file = $PGB_DIR/userlist.txt#" \
    -e "s#^logfile = .*#logfile = $PGB_DIR/pgbouncer.log#" \
    -e "s#^pidfile = .*#pidfile = $PGB_DIR/pgbouncer.pid#" \
    deploy/pgbouncer.ini >"$PGB_DIR/pgbouncer.ini"
grep -q "host=$SOCK " "$PGB_DIR/pgbouncer.ini" && grep -q "listen_port = $PGB_PORT" "$PGB_DIR/pgbouncer.ini" \
  && grep -q "auth_type = trust" "$PGB_DIR/pgbouncer.ini" || die "templating deploy/pgbouncer.ini changed nothing: the shipped file's lines moved"
chmod 1777 "$PGB_DIR"; chmod 644 "$PGB_DIR"/*
"${PG_RUN_AS[@]}" "$PGBOUNCER" "$PGB_DIR/pgbouncer.ini" </dev/null >"$PGB_DIR/stdout" 2>&1 &
PGB_RUNAS_PID=$!
PGB_PID=$PGB_RUNAS_PID
POOLED_URL="postgresql://nimbus@127.0.0.1:$PGB_PORT/nimbus"
for ((i = 0; i < 100; i++)); do
  "$PG_BIN/psql" "$POOLED_URL" -X -q -At -c 'SELECT 1' >/dev/null 2>&1 && break
  kill -0 "$PGB_RUNAS_PID" 2>/dev/null || die "pgbouncer exited: $(tail -5 "$PGB_DIR/stdout" "$PGB_DIR/pgbouncer.log" 2>/dev/null)"
  sleep 0.1
done
[ "$("$PG_BIN/psql" "$POOLED_URL" -X -q -At -c 'SHOW jit' 2>&1)" = off ] \
  || die "PgBouncer on port $PGB_PORT does not answer with connect_query applied: $(tail -5 "$PGB_DIR/pgbouncer.log" 2>/dev/null)"
if ((${#PG_RUN_AS[@]})); then  # the pgbouncer process is runuser's child
  PGB_PID=$(cat /proc/"$PGB_RUNAS_PID"/task/*/children 2>/dev/null | awk '{print $1}')
  [ "$(cat "/proc/$PGB_PID/comm" 2>/dev/null)" = pgbouncer ] || die "cannot find the pgbouncer process under runuser $PGB_RUNAS_PID"
fi
say "pgbouncer pid $PGB_PID on port $PGB_PORT (transaction pooling, deploy/pgbouncer.ini)"

# ---------------------------------------------------------------- nginx (deploy/nginx.conf)
# As Tests/integration/proxies.sh's start_nginx: the first `server 127.0.0.1:N` line of the
# upstream block is the template of all of them (commented examples dropped), `listen 443` becomes
# a loopback port with one more plain-HTTP listener before it, certificate paths point at a
# self-signed pair; every other line is used as shipped. A minimal main config wraps it.
mkdir -p "$WORK/ssl"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$WORK/ssl/privkey.pem" -out "$WORK/ssl/fullchain.pem" \
  >"$WORK/ssl/openssl.log" 2>&1 || die "openssl could not make a certificate: $(cat "$WORK/ssl/openssl.log")"
chmod 644 "$WORK/ssl"/*.pem
# start_nginx NAME TLS_PORT PLAIN_PORT UPSTREAM_PORT...: sets <NAME>_PID (the master).
start_nginx() {
  local name=$1 tls=$2 plain_port=$3 dir=$WORK/$1 shipped=$ROOT/deploy/nginx.conf template servers plain port
  shift 3
  mkdir -p "$dir"
  template=$(grep -E -m1 '^[[:space:]]*server[[:space:]]+127\.0\.0\.1:[0-9]+' "$shipped") \
    || die "deploy/nginx.conf has no 'server 127.0.0.1:PORT' line in its upstream block"
  servers=$(for port in "$@"; do printf '%s\n' "$template" | sed -E "s/127\.0\.0\.1:[0-9]+/127.0.0.1:$port/"; done | sed 's/$/\\/')
  plain="    listen 127.0.0.1:$plain_port;   # bench-only plain listener (recload and lpwait speak plain HTTP)\\
"
  sed -E \
    -e "/^[[:space:]]*#?[[:space:]]*server[[:space:]]+127\.0\.0\.1:[0-9]+/{x;/^done$/{x;d};s/.*/done/;x;c\\
${servers%\\}
}" \
    -e "s|^([[:space:]]*)listen[[:space:]]+443([[:space:];])|${plain}\\1listen 127.0.0.1:$tls\\2|" \
    -e "s#/etc/ssl/nimbus/#$WORK/ssl/#g" \
    "$shipped" >"$dir/nimbus.conf"
  grep -q "listen 127.0.0.1:$tls" "$dir/nimbus.conf" && grep -q "listen 127.0.0.1:$plain_port;" "$dir/nimbus.conf" \
    || die "deploy/nginx.conf: no 'listen 443' line to template"
  cat >"$dir/main.conf" <<EOF
# Bench wrapper around deploy/nginx.conf (a conf.d snippet), made by bench/scaleout.sh.
daemon off;
worker_processes $NGINX_WORKERS;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    client_body_temp_path $dir/client_body_temp;
    proxy_temp_path $dir/proxy_temp;
    fastcgi_temp_path $dir/fastcgi_temp;
    uwsgi_temp_path $dir/uwsgi_temp;
    scgi_temp_path $dir/scgi_temp;
    log_format upstreams '\$msec \$status \$request_method \$uri up=\$upstream_addr upstatus=\$upstream_status t=\$request_time';
    access_log $dir/access.log upstreams buffer=64k flush=1s;
    include $dir/nimbus.conf;
}
EOF
  "$NGINX" -t -q -e "$dir/error.log" -p "$dir" -c "$dir/main.conf" >"$dir/test.log" 2>&1 \
    || die "nginx rejects the templated deploy/nginx.conf: $(tail -n 5 "$dir/test.log" "$dir/error.log" 2>/dev/null)"
  "$NGINX" -e "$dir/error.log" -p "$dir" -c "$dir/main.conf" </dev/null >>"$dir/test.log" 2>&1 &
  printf -v "${name}_PID" '%s' "$!"
  wait_listening "$plain_port" "$!" "nginx $name" "$dir/error.log"
  wait_listening "$tls" "$!" "nginx $name" "$dir/error.log"
  say "nginx $name: pid $!, plain http on $plain_port (TLS on $tls) over instance port(s) $*"
}
start_nginx NGINX1 "$NGINX1_TLS" "$NGINX1_PORT" "${INST_PORT[1]}"
start_nginx NGINX2 "$NGINX2_TLS" "$NGINX2_PORT" "${INST_PORT[1]}" "${INST_PORT[2]}"

# ---------------------------------------------------------------- instances
INST_GEN=0
# start_instance SLOT MODE (direct|pooled): nimbus serve on INST_PORT[SLOT]; log WORK/nimbus-SLOT-GEN.log.
start_instance() {
  local slot=$1 mode=$2 log i
  local -a db=(--database-url "$DB_URL")
  [ "$mode" = pooled ] && db=(--database-url "$POOLED_URL" --database-pooler transaction --listen-database-url "$DB_URL")
  INST_GEN=$((INST_GEN + 1))
  log=$WORK/nimbus-$slot-$INST_GEN-$mode.log
  "$NIMBUS_BIN" serve --listen "127.0.0.1:${INST_PORT[slot]}" "${db[@]}" --data-dir "$WORK/data-$slot" \
    --requests-per-second-per-token 0 --trusted-proxy 127.0.0.1/32 --prune-interval 0s \
    ${POOL_SIZE:+--pool-size "$POOL_SIZE"} ${EVENT_LOOPS:+--event-loops "$EVENT_LOOPS"} </dev/null >"$log" 2>&1 &
  INST_PID[slot]=$!
  INST_MODE[slot]=$mode
  for ((i = 0; i < 600; i++)); do
    grep -aq "listening on http://127.0.0.1:${INST_PORT[slot]}" "$log" 2>/dev/null && break
    kill -0 "${INST_PID[slot]}" 2>/dev/null || die "nimbus $slot ($mode) exited; log tail:$(printf '\n'; tail -20 "$log")"
    sleep 0.1
  done
  grep -aq "listening on http://127.0.0.1:${INST_PORT[slot]}" "$log" || die "nimbus $slot did not listen within 60 s"
  say "nimbus $slot ($mode): pid ${INST_PID[slot]}, port ${INST_PORT[slot]}"
}
stop_instance() {
  local slot=$1
  [ -n "${INST_PID[slot]}" ] || return 0
  stop_pid "${INST_PID[slot]}" TERM 30
  INST_PID[slot]="" INST_MODE[slot]=none
}
# use_instances MODE COUNT: exactly instances 1..COUNT running in MODE; new ones get a warm-up.
use_instances() {
  local mode=$1 count=$2 slot want
  local -a fresh=()
  for slot in 1 2; do
    want=none; ((slot <= count)) && want=$mode
    [ "${INST_MODE[slot]}" = "$want" ] && continue
    stop_instance "$slot"
    [ "$want" = none ] && continue
    start_instance "$slot" "$want"
    fresh+=("$slot")
  done
  for slot in "${fresh[@]}"; do
    "$RECLOAD" modify 127.0.0.1 "${INST_PORT[slot]}" "$API/records/modify" "$TOKEN" 4 "$(awk -v w="$WARMUP" 'BEGIN {print w / 2}')" 1 \
      warm "warm$INST_GEN-$slot" >"$WORK/warm.out" 2>&1 || true
    "$RECLOAD" changes 127.0.0.1 "${INST_PORT[slot]}" "$API/records/changes" "$TOKEN" 4 "$(awk -v w="$WARMUP" 'BEGIN {print w / 2}')" \
      "$FEED_ZONE" 200 >>"$WORK/warm.out" 2>&1 || true
  done
}
instances_alive() {
  local slot
  for slot in 1 2; do
    [ -z "${INST_PID[slot]}" ] || kill -0 "${INST_PID[slot]}" 2>/dev/null \
      || die "nimbus $slot (pid ${INST_PID[slot]}) died; log tail:$(printf '\n'; tail -30 "$WORK"/nimbus-"$slot"-*.log | tail -30)"
  done
}

# ---------------------------------------------------------------- zones, preload
use_instances direct 1
ops=""
for z in warm $FEED_ZONE ${WRITE_ZONES//,/ } $(seq -f 'wa%g' 0 $((WAKE_WAITERS - 1))) $(seq -f 'wb%g' 0 $((WAKE_WAITERS - 1))); do
  ops+="${ops:+,}{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"$z\"}}}"
done
code=$(curl -sS -o "$WORK/zones.json" -w '%{http_code}' --max-time 30 -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' --data "{\"operations\":[$ops]}" "http://127.0.0.1:${INST_PORT[1]}$API/zones/modify") || die "zones/modify failed"
[ "$code" = 200 ] || die "zones/modify: HTTP $code $(head -c 300 "$WORK/zones.json")"
! grep -q serverErrorCode "$WORK/zones.json" || die "zones/modify item errors: $(head -c 300 "$WORK/zones.json")"

say "preloading zone $FEED_ZONE with $PRELOAD records (records/modify, 100 per request, $CLIENTS clients)"
f=$WORK/runs/preload.txt
"$RECLOAD" modify 127.0.0.1 "${INST_PORT[1]}" "$API/records/modify" "$TOKEN" "$CLIENTS" 300 100 "$FEED_ZONE" preload "$PRELOAD" \
  >"$f" 2>"$f.err" || say "recload exited $? (preload)"
kv() { tr ' ' '\n' <"$1" | awk -F= -v k="$2" '$1 == k {print $2; exit}'; }
preload_line="$(kv "$f" records) records in $(kv "$f" secs)s ($(kv "$f" records_per_s) records/s); non-200 $(kv "$f" non200), item errors $(kv "$f" item_errors)"
say "  preload: $preload_line"
[ "$(kv "$f" records)" = "$PRELOAD" ] || die "preload stored $(kv "$f" records) of $PRELOAD records: $(head -3 "$f.err")"
psql -d nimbus -c 'VACUUM ANALYZE' >/dev/null
# A first warm-up of the schema and caches on instance 1 (warm-ups after later starts are shorter).
"$RECLOAD" modify 127.0.0.1 "${INST_PORT[1]}" "$API/records/modify" "$TOKEN" "$CLIENTS" 2 1 "$WRITE_ZONES" warm0 >/dev/null 2>&1 || true

# ---------------------------------------------------------------- measurement
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
nimbus_ticks() { local t=0 slot; for slot in 1 2; do [ -n "${INST_PID[slot]}" ] && t=$((t + $(proc_ticks "${INST_PID[slot]}"))); done; echo "$t"; }
# A master with its reaped children (cutime) plus its live children: PostgreSQL, nginx.
tree_ticks() {
  local t c
  [ -n "$1" ] || { echo 0; return; }
  t=$(proc_ticks "$1" all)
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do t=$((t + $(proc_ticks "$c"))); done
  echo "$t"
}
pg_ticks() { tree_ticks "$(pg_pid)"; }
nginx_ticks() { echo $(( $(tree_ticks "$NGINX1_PID") + $(tree_ticks "$NGINX2_PID") )); }
pgb_ticks() { proc_ticks "$PGB_PID"; }
ticks_now() { echo "$(nimbus_ticks) $(pg_ticks) $(nginx_ticks) $(pgb_ticks) $(machine_busy) $(date +%s.%N)"; }

RESULTS=$WORK/results
: >"$RESULTS"
# Fields of $RESULTS (one line per run):
#   1 config 2 workload 3 round 4 req/s 5 records/s 6 p50 7 p99 8 requests 9 non200 10 5xx 11 item_errors 12 sockerr
#   13-19 CPU s per 1,000 requests: nimbus postgres nginx pgbouncer loadgen other all
#   20-26 cores used: nimbus postgres nginx pgbouncer loadgen other all  27 t0 28 t1 29 load1 30 max_ms
#   31 write transactions (xids) per 1,000 requests  32 WAL KB per 1,000 requests
# db_counters: the next transaction id (every write transaction takes one; reading it takes none)
# and the WAL position in bytes: their deltas over a run give commits and WAL per request.
db_counters() { psql -d nimbus -At -F' ' -c "SELECT pg_snapshot_xmax(pg_current_snapshot()), pg_current_wal_lsn() - '0/0'"; }
port_of() { case $1 in a) echo "${INST_PORT[1]}" ;; b) echo "$NGINX1_PORT" ;; c|d) echo "$NGINX2_PORT" ;; esac; }
desc() {
  case $1 in
    a) echo "a direct -> 1 instance" ;; b) echo "b nginx -> 1 instance" ;;
    c) echo "c nginx -> 2 instances" ;; d) echo "d nginx -> 2 inst. -> PgBouncer" ;;
  esac
}
setup_config() {
  case $1 in a|b) use_instances direct 1 ;; c) use_instances direct 2 ;; d) use_instances pooled 2 ;;
    *) die "unknown configuration '$1' in BENCH_CONFIGS (a b c d)" ;; esac
}
SEQ=0
# run_load CONFIG WORKLOAD ROUND
run_load() {
  local cfg=$1 w=$2 r=$3 port f before after
  port=$(port_of "$cfg")
  SEQ=$((SEQ + 1)); f=$WORK/runs/$cfg-$w-$r.txt
  checkpoint
  wal0=$(db_counters)
  before=$(ticks_now)
  if [ "$w" = writes ]; then
    "$RECLOAD" modify 127.0.0.1 "$port" "$API/records/modify" "$TOKEN" "$CLIENTS" "$SECS" 1 "$WRITE_ZONES" "r$SEQ-$cfg" >"$f" 2>"$f.err" \
      || say "recload exited $? ($cfg $w round $r)"
  else
    "$RECLOAD" changes 127.0.0.1 "$port" "$API/records/changes" "$TOKEN" "$CLIENTS" "$SECS" "$FEED_ZONE" 200 >"$f" 2>"$f.err" \
      || say "recload exited $? ($cfg $w round $r)"
  fi
  after=$(ticks_now)
  wal1=$(db_counters)
  instances_alive
  [ -n "$(kv "$f" requests)" ] || { cat "$f.err" >&2; die "no output from recload ($cfg $w round $r)"; }
  awk -v cfg="$cfg" -v w="$w" -v r="$r" -v b="$before" -v a="$after" -v hz="$CLK_TCK" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
      -v req_s="$(kv "$f" req_per_s)" -v rec_s="$(kv "$f" records_per_s)" -v p50="$(kv "$f" p50_ms)" -v p99="$(kv "$f" p99_ms)" \
      -v maxms="$(kv "$f" max_ms)" -v n="$(kv "$f" requests)" -v non200="$(kv "$f" non200)" -v s5="$(kv "$f" status_5xx)" \
      -v items="$(kv "$f" item_errors)" -v sock="$(kv "$f" sockerr)" -v lg="$(kv "$f" cpu_s)" -v d0="$wal0" -v d1="$wal1" 'BEGIN {
    split(b, x, " "); split(a, y, " ")
    nim = (y[1] - x[1]) / hz; pg = (y[2] - x[2]) / hz; ngx = (y[3] - x[3]) / hz; pgb = (y[4] - x[4]) / hz
    all = (y[5] - x[5]) / hz; wall = y[6] - x[6]
    other = all - nim - pg - ngx - pgb - lg; if (other < 0) other = 0
    k = (n > 0 ? 1000 / n : 0)
    printf "%s %s %s %.1f %.1f %.3f %.3f %d %d %d %d %d", cfg, w, r, req_s, rec_s, p50, p99, n, non200, s5, items, sock
    printf " %.4f %.4f %.4f %.4f %.4f %.4f %.4f", nim * k, pg * k, ngx * k, pgb * k, lg * k, other * k, all * k
    printf " %.3f %.3f %.3f %.3f %.3f %.3f %.3f", nim / wall, pg / wall, ngx / wall, pgb / wall, lg / wall, other / wall, all / wall
    split(d0, u, " "); split(d1, v, " ")
    printf " %s %s %s %.3f %.2f %.1f\n", x[6], y[6], load, maxms, (v[1] - u[1]) * k, (v[2] - u[2]) / 1024 * k }' >>"$RESULTS"
  say "  $(desc "$cfg"), $w, round $r: $(tail -1 "$RESULTS" | awk '{printf "%s req/s, %s records/s, p50 %s ms, p99 %s ms; non-200 %s, item errors %s, socket errors %s; cores nimbus/pg/nginx/pgbouncer/loadgen/other %s/%s/%s/%s/%s/%s",
    $4, $5, $6, $7, $9, $11, $12, $20, $21, $22, $23, $24, $25}')"
  [ -s "$f.err" ] && say "  recload stderr: $(head -3 "$f.err" | cut -c1-300 | tr '\n' ' ')"
  return 0
}
run_config() {  # run_config CONFIG ROUND
  setup_config "$1"
  if (($2 % 2)); then run_load "$1" writes "$2"; run_load "$1" changes "$2"
  else run_load "$1" changes "$2"; run_load "$1" writes "$2"; fi
}

# ---------------------------------------------------------------- 3. runs
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
say "load average before: $load_before; ${SECS}s runs, $ROUNDS rounds, $CLIENTS clients"
read -r -a CFG <<<"$CONFIGS"
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then for ((i = 0; i < ${#CFG[@]}; i++)); do run_config "${CFG[i]}" "$r"; done
  else for ((i = ${#CFG[@]} - 1; i >= 0; i--)); do run_config "${CFG[i]}" "$r"; done; fi
done

# ---------------------------------------------------------------- 4. wake latency through nginx, 2 instances
use_instances direct 2
for set in a b; do
  for ((i = 0; i < WAKE_WAITERS; i++)); do printf '%s %s w%s%d\n' "${WAIT_TOKENS[i / 4]}" "$TOKEN" "$set" "$i"; done >"$WORK/wake-$set.lines"
done
WAKE_WINDOWS=()
# wake_run SET SLOT: waiters through nginx (2 instances), writes directly to instance SLOT.
wake_run() {
  local set=$1 slot=$2 out t0 t1 cpu0 cpu1
  say "wake: $WAKE_WAITERS waiters through nginx (port $NGINX2_PORT), $WAKE_WRITES writes directly to instance $slot"
  cpu0=$(( $(nimbus_ticks) + $(nginx_ticks) ))
  t0=$(date +%s.%N)
  timeout 300 "$LPWAIT" wake 127.0.0.1 "$NGINX2_PORT" 127.0.0.1 "${INST_PORT[slot]}" "$WORK/wake-$set.lines" "$API/records/changes" "$API/records/modify" \
    single "$WAKE_WRITES" >"$WORK/wake-$set.out" 2>"$WORK/wake-$set.err" || say "lpwait exited with $?"
  t1=$(date +%s.%N)
  cpu1=$(( $(nimbus_ticks) + $(nginx_ticks) ))
  instances_alive
  out=$(cat "$WORK/wake-$set.out")
  grep -q '^samples' <<<"$out" || die "lpwait printed no samples: $out $(head -5 "$WORK/wake-$set.err")"
  [ -s "$WORK/wake-$set.err" ] && say "  lpwait: $(head -4 "$WORK/wake-$set.err" | tr '\n' ' ' | cut -c1-400)"
  say "  $(tr '\n' ';' <<<"$out")"
  WAKE_WINDOWS+=("$t0 $t1")
  eval "wake_${set}_cpu_ms=$(( (cpu1 - cpu0) * 1000 / CLK_TCK ))"
}
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i + 1); exit}}' <<<"$1"; }
wake_run a 1
wake_run b 2
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- health and shutdown
instances_alive
sleep 1.2  # nginx flushes its access log buffer every second
problem_pattern='^(warning|error) |"level":"(warning|error)"|Fatal error|panic|Segmentation fault|Illegal instruction'
nimbus_problems=$(cat "$WORK"/nimbus-*.log | grep -a -E "$problem_pattern" | cut -c1-240 || true)
nginx_problems=$(cat "$WORK"/NGINX*/error.log 2>/dev/null | grep -a -E '\[(warn|error|crit|alert|emerg)\]' | cut -c1-240 || true)
pgb_problems=$(grep -a -E ' (WARNING|ERROR|FATAL) ' "$PGB_DIR/pgbouncer.log" 2>/dev/null | cut -c1-240 || true)
pg_problems=$(grep -a -E 'ERROR|FATAL|PANIC' "$SOCK/postgres.log" 2>/dev/null | cut -c1-240 || true)
deadlocks=$(grep -a -c 'deadlock detected' "$SOCK/postgres.log" 2>/dev/null || true)
# The first deadlock as PostgreSQL reports it (its DETAIL names both processes' statements).
first_deadlock=$(awk '/ERROR:  deadlock detected/ {on = 1} on && /ERROR:|DETAIL:|Process [0-9]+ waits|HINT:|CONTEXT:/ {print} on && /STATEMENT:/ {exit}' \
  "$SOCK/postgres.log" 2>/dev/null | cut -c1-300 || true)
stop_status=""
for slot in 1 2; do
  t=$(date +%s%N)
  pid=${INST_PID[slot]}
  kill -TERM "$pid"
  rc=0; wait "$pid" || rc=$?
  stop_status+="instance $slot exit $rc in $(( ($(date +%s%N) - t) / 1000000 )) ms; "
  INST_PID[slot]="" INST_MODE[slot]=none
done

# ---------------------------------------------------------------- 5. report
set +e +o pipefail
median() {  # median CONFIG WORKLOAD FIELD
  awk -v c="$1" -v w="$2" -v f="$3" '$1 == c && $2 == w {x[n++] = $f}
    END { if (!n) { print "-"; exit } for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
          m = (n % 2) ? x[(n - 1) / 2] : (x[n / 2 - 1] + x[n / 2]) / 2; printf "%.4f", m }' "$RESULTS"
}
fmt() { awk -v v="$1" -v d="${2:-1}" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.*f", d, v }'; }
commits_s() {  # commits_s CONFIG: median over the writes runs of write transactions per second
  awk -v c="$1" '$1 == c && $2 == "writes" {x[n++] = $4 * $31 / 1000}
    END { if (!n) { print "-"; exit } for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
          printf "%.0f", (n % 2) ? x[(n - 1) / 2] : (x[n / 2 - 1] + x[n / 2]) / 2 }' "$RESULTS"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
total() { awk -v c="$1" -v f="$2" '(c == "" || $1 == c) {t += $f} END {print t + 0}' "$RESULTS"; }
# nginx's access log: requests per upstream (and non-200s) between two times.
nginx_split() {  # nginx_split T0 T1 [URI_SUBSTRING]
  cat "$WORK"/NGINX*/access.log 2>/dev/null | awk -v a="$1" -v b="$2" -v u="${3:-}" -v p1="127.0.0.1:${INST_PORT[1]}" -v p2="127.0.0.1:${INST_PORT[2]}" '
    $1 >= a && $1 <= b && (u == "" || index($4, u)) { n++; if ($2 != 200) bad++
      if ($5 == "up=" p1) i1++; else if ($5 == "up=" p2) i2++; else oth++ }
    END { printf "%d requests: instance 1 %d, instance 2 %d, other/none %d; non-200 at nginx %d", n, i1, i2, oth, bad }'
}
{
  echo
  echo "Per run (req/s: requests/s, pages/s for changes; latency ms; CPU s per 1,000 requests; cores used):"
  echo "  (xacts: write transactions per 1,000 requests; WAL KB per 1,000 requests)"
  printf '  %-3s %-8s %2s %9s %10s %8s %8s %6s %5s %5s | %7s %7s %7s %7s %7s %7s | %5s %5s %5s %5s %5s %5s %5s | %6s %7s\n' \
    cfg workload rd req/s records/s p50 p99 non200 items sock nimbus pg nginx pgbncr loadgen other \
    nim pg ngx pgb load other all xacts WAL_KB
  awk '{printf "  %-3s %-8s %2s %9.1f %10.1f %8.2f %8.2f %6d %5d %5d | %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f | %5.2f %5.2f %5.2f %5.2f %5.2f %5.2f %5.2f | %6.1f %7.1f\n",
        $1, $2, $3, $4, $5, $6, $7, $9, $11, $12, $13, $14, $15, $16, $17, $18, $20, $21, $22, $23, $24, $25, $26, $31, $32}' "$RESULTS"
  echo "  nginx's view of the load runs (access log; which instance served each request):"
  while read -r cfg w r t0 t1; do
    case $cfg in a) continue ;; esac
    echo "    $cfg $w round $r: $(nginx_split "$t0" "$t1")"
  done < <(awk '{print $1, $2, $3, $27, $28}' "$RESULTS")
  echo
  echo "================ Nimbus scale-out benchmark summary ================"
  echo "machine: $(nproc) cores, kernel $(uname -r); load average before $load_before, after $load_after"
  echo "nimbus build: $rev; pool size ${POOL_SIZE:-default}, event loops ${EVENT_LOOPS:-default} per instance"
  echo "postgres $PG_VERSION, ONE scratch cluster (Unix socket): $PG_SETTINGS; $versions (nginx worker_processes $NGINX_WORKERS)"
  echo "runs: ${SECS}s each, $ROUNDS rounds interleaved ($CONFIGS, then reversed), CHECKPOINT before each; medians over rounds"
  echo "load: $CLIENTS keep-alive HTTP clients (bench/recload.c); writes = records/modify, 1 record/request over 32 zones;"
  echo "      changes = records/changes, resultsLimit 200, paging through a zone of $PRELOAD records (preload: $preload_line)"
  echo "proxies: deploy/nginx.conf templated (ports, upstream lines, cert paths) + a plain-HTTP listener; deploy/pgbouncer.ini"
  echo "      templated (socket, port, auth trust, log/pid paths): pool_mode transaction, default_pool_size 16"
  echo
  printf '  %-32s %-8s %9s %10s %8s %8s %7s %10s %9s %9s\n' configuration workload req/s records/s p50_ms p99_ms "vs (a)" "req/commit" "commits/s" "WAL B/req"
  for w in writes changes; do
    for cfg in $CONFIGS; do
      x=$(median "$cfg" "$w" 31)
      printf '  %-32s %-8s %9s %10s %8s %8s %7s %10s %9s %9s\n' "$(desc "$cfg")" "$w" "$(fmt "$(median "$cfg" "$w" 4)" 0)" \
        "$(fmt "$(median "$cfg" "$w" 5)" 0)" "$(fmt "$(median "$cfg" "$w" 6)" 2)" "$(fmt "$(median "$cfg" "$w" 7)" 2)" \
        "$(ratio "$(median "$cfg" "$w" 4)" "$(median a "$w" 4)")" \
        "$([ "$w" = writes ] && awk -v x="$x" 'BEGIN {print (x > 0 ? sprintf("%.1f", 1000 / x) : "-")}' || echo -)" \
        "$([ "$w" = writes ] && commits_s "$cfg" || echo -)" \
        "$(awk -v k="$(median "$cfg" "$w" 32)" 'BEGIN {printf "%.0f", k * 1024 / 1000}')"
    done
  done
  echo "  (req/commit: write requests per write transaction, from transaction ids: concurrent creates share one"
  echo "   statement and commit in Nimbus (--write-batches), so fewer requests per instance make smaller batches)"
  echo "  errors (all runs): non-200 $(total "" 9) (5xx $(total "" 10)), item errors $(total "" 11), socket errors $(total "" 12);" \
       "non-200 by configuration: $(for cfg in $CONFIGS; do printf '%s %s ' "$cfg" "$(total "$cfg" 9)"; done)"
  contended=$(awk '$25 > 0.3 {printf "%s%s/%s/r%s (%.2f)", n++ ? ", " : "", $1, $2, $3, $25}' "$RESULTS")
  echo "  runs with > 0.3 cores of other load on the machine (not this benchmark's processes): ${contended:-none}"
  echo
  echo "CPU seconds per 1,000 requests (medians over rounds; 'all' is the whole machine's busy CPU, 'other' what no"
  echo "  process of the benchmark used) and the CPU split (share of the machine's busy CPU during the runs):"
  printf '  %-32s %-8s %7s %7s %7s %7s %7s %7s %7s | %s\n' configuration workload nimbus pg nginx pgbncr loadgen other all \
    "split nimbus/pg/nginx/pgbouncer/loadgen/other; cores busy of $(nproc)"
  for w in writes changes; do
    for cfg in $CONFIGS; do
      printf '  %-32s %-8s' "$(desc "$cfg")" "$w"
      for fld in 13 14 15 16 17 18 19; do printf ' %7s' "$(fmt "$(median "$cfg" "$w" "$fld")" 3)"; done
      all=$(median "$cfg" "$w" 26)
      printf ' | %s; %s\n' "$(for fld in 20 21 22 23 24 25; do printf '%s%%/' "$(awk -v a="$(median "$cfg" "$w" "$fld")" -v b="$all" 'BEGIN {printf "%.0f", (b > 0 ? 100 * a / b : 0)}')"; done | sed 's#/$##')" \
        "$(fmt "$all" 2)"
    done
  done
  echo
  for set in a b; do
    out=$(cat "$WORK/wake-$set.out" 2>/dev/null); s=$(grep '^samples' <<<"$out"); send=$(grep '^send' <<<"$out"); ack=$(grep '^ack' <<<"$out")
    eval "wake_${set}_line=\"\$(field \"\$s\" samples) samples: send->answer p50 \$(field \"\$send\" p50) p99 \$(field \"\$send\" p99) max \$(field \"\$send\" max) ms; ack->answer p50 \$(field \"\$ack\" p50) p99 \$(field \"\$ack\" p99) ms; wrong \$(field \"\$s\" wrong) other \$(field \"\$s\" other) timeouts \$(field \"\$s\" timeouts) errors \$(field \"\$s\" errors)\""
    eval "wake_${set}_p50=\$(field \"\$send\" p50) wake_${set}_p99=\$(field \"\$send\" p99)"
  done
  echo "wake latency through nginx, 2 instances ($WAKE_WAITERS waiters through nginx, own zone each, wait 55; writes directly to one instance):"
  echo "  writes to instance 1: $wake_a_line"
  echo "    nginx: waits $(nginx_split ${WAKE_WINDOWS[0]} records/changes)"
  echo "  writes to instance 2: $wake_b_line"
  echo "    nginx: waits $(nginx_split ${WAKE_WINDOWS[1]} records/changes)"
  echo "  wake p50 / p99 (send->answer): $wake_a_p50 / $wake_a_p99 ms and $wake_b_p50 / $wake_b_p99 ms; over both:" \
       "p99 <= $(awk -v a="$wake_a_p99" -v b="$wake_b_p99" 'BEGIN {printf "%.3f", (a > b ? a : b)}') ms (the larger of the two runs' p99)"
  echo "  (each sample: from just before the write is sent to the waiter's complete answer, through nginx; lpwait's own"
  echo "   cost is an epoll loop in C, negligible; nimbus + nginx CPU during the two runs: ${wake_a_cpu_ms} + ${wake_b_cpu_ms} ms)"
  echo
  echo "Estimate: PostgreSQL on cores of its own (CPU only, from the CPU per request measured above)"
  echo "  assumptions: $EST_INSTANCES instances with $EST_NIMBUS_CORES cores each, PostgreSQL on $EST_PG_CORES cores of its own; nginx, PgBouncer"
  echo "  and the clients on other cores; CPU per request stays what it was here (measured on $(nproc) shared cores, context"
  echo "  switches and contention included);"
  echo "  the disk (WAL flush at every commit, synchronous_commit on) and lock contention are not modelled; writes are"
  echo "  batched per instance, so their CPU per request holds for the batch sizes seen here (req/commit above)."
  for w in writes changes; do
    for cfg in c d; do
      case " $CONFIGS " in *" $cfg "*) ;; *) continue ;; esac
      n=$(median "$cfg" "$w" 13); p=$(median "$cfg" "$w" 14); g=$(median "$cfg" "$w" 15); b=$(median "$cfg" "$w" 16)
      awk -v w="$w" -v cfg="$(desc "$cfg")" -v n="$n" -v p="$p" -v g="$g" -v b="$b" -v N="$EST_INSTANCES" -v C="$EST_NIMBUS_CORES" \
          -v P="$EST_PG_CORES" -v pooled="$([ "$cfg" = d ] && echo 1)" -v meas="$(median "$cfg" "$w" 4)" -v ref="$(median a "$w" 4)" \
          -v rpr="$(median "$cfg" "$w" 5)" -v cores="$(nproc)" -v xk="$(median "$cfg" "$w" 31)" -v cs="$(commits_s "$cfg")" \
          -v busy="$(median "$cfg" "$w" 26)" 'BEGIN {
        if (n <= 0 || p <= 0) { printf "  %s, %s: no CPU figures\n", w, cfg; exit }
        nm = n / 1000; pm = p / 1000  # CPU seconds per request
        capn = N * C / nm; capp = P / pm; cap1 = (C / nm < capp ? C / nm : capp)
        est = (capn < capp ? capn : capp); lim = (capn < capp ? "Nimbus" : "PostgreSQL")
        printf "  %s, per-request CPU of %s: nimbus %.3f ms (both instances), postgres %.3f ms, nginx %.3f ms", w, cfg, n, p, g
        if (pooled) printf ", pgbouncer %.3f ms", b
        printf "\n    N instances: min(N x %d cores / %.3f ms, %d cores / %.3f ms) = min(N x %.0f, %.0f) req/s\n", C, n, P, p, C / nm, capp
        printf "    N = %d: min(%.0f, %.0f) = %.0f req/s (%s-bound); N = 1: %.0f req/s; PostgreSQL is the limit from N >= %.2f\n",
          N, capn, capp, est, lim, cap1, capp * nm / C
        if (w == "changes" && meas > 0) printf "    (pages of %.0f records: N = %d would be %.0f records/s)\n", rpr / meas, N, est * rpr / meas
        if (pooled && b > 0) printf "    PgBouncer is one process (one core): at most %.0f req/s through it at %.3f ms each\n", 1000 / b, b
        if (g > 0) printf "    nginx at %.3f ms per request: %.0f req/s per core it gets\n", g, 1000 / g
        printf "    measured here on %s shared cores: %.0f req/s (a: %.0f), %.2f cores busy\n", cores, meas, ref, busy
        if (w == "writes" && xk > 0) printf "    at %.1f requests per commit that is %.0f commits/s (%.0f here): the WAL flush must keep up\n", 1000 / xk, est * xk / 1000, cs
      }'
    done
  done
  echo
  echo "shutdown: $stop_status"
  for kind in nimbus nginx pgb pg; do
    case $kind in nimbus) label="nimbus logs warnings/errors" v=$nimbus_problems ;; nginx) label="nginx error.log warn+" v=$nginx_problems ;;
      pgb) label="pgbouncer log WARNING/ERROR" v=$pgb_problems ;; pg) label="postgres log ERROR/FATAL/PANIC" v=$pg_problems ;; esac
    if [ -n "$v" ]; then
      echo "$label: $(printf '%s\n' "$v" | wc -l) lines; first ones:"
      printf '%s\n' "$v" | head -4 | sed 's/^/  /'
    else
      echo "$label: none"
    fi
  done
  if [ "${deadlocks:-0}" -gt 0 ]; then
    echo "postgres deadlocks: $deadlocks (each fails the write batch it aborted with a 503 TRY_AGAIN_LATER); the first:"
    printf '%s\n' "$first_deadlock" | sed 's/^/  /'
  fi
  echo "wall time: $(( $(date +%s) - T0 ))s"
  echo "===================================================================="
}
