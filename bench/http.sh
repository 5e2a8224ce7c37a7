#!/usr/bin/env bash
# HTTP benchmark: Nimbus against nginx on loopback, same machine, same bytes.
#
#   bash bench/http.sh
#
# 1. Installs wrk and nginx (deploy/install-deps.sh) and builds nimbus in release mode.
# 2. Starts nimbus (embedded PostgreSQL in a temp data dir) and nginx (own temp prefix, 2 workers,
#    access_log off) serving the exact /limits body with the same Content-Type.
# 3. Throughput: wrk -t2 -c64 -d10s --latency against each (short warm-up first, then 2 rounds in
#    A-B-B-A order); prints req/s, p50/p90/p99, the nimbus/nginx ratio, wrk's socket errors and
#    non-2xx counts, and the CPU used by the server, by wrk and by anything else during each run
#    (the machine is shared: cpu_us/req is the figure that other load does not skew).
# 4. Memory: RSS before and while 5,000 idle keep-alive connections (each after one GET /limits)
#    are held for a few seconds by bench/holdconn.c; prints KB per connection for both servers.
# 5. A summary block. Loopback only; everything it starts is stopped by PID; temp dirs removed.
#
# Knobs (environment): BENCH_DURATION=10s BENCH_WARMUP=2s BENCH_THREADS=2 BENCH_CONNECTIONS=64
#   BENCH_ROUNDS=2 (rounds alternate the order: nimbus,nginx then nginx,nimbus; summary figures are means)
#   BENCH_IDLE_CONNECTIONS=5000 BENCH_HOLD_SECONDS=4 BENCH_EVENT_LOOPS= (nimbus default: cores)
#   BENCH_NGINX_WORKERS=2 BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1 BENCH_NIMBUS_BIN=path (that binary; no build)
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_DURATION=1s BENCH_WARMUP=1s BENCH_CONNECTIONS=8 BENCH_ROUNDS=1 BENCH_IDLE_CONNECTIONS=200 BENCH_HOLD_SECONDS=1), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 90 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=http
# say, die, stop_pid, alive, machine_busy and the admin console's free port (NIMBUS_ADMIN_LISTEN).
source bench/lib.sh
source Tests/tools.sh  # find_tool: nginx is in /usr/sbin, off a normal user's PATH
smoke_mode 90 BENCH_DURATION=1s BENCH_WARMUP=1s BENCH_CONNECTIONS=8 BENCH_ROUNDS=1 BENCH_IDLE_CONNECTIONS=200 BENCH_HOLD_SECONDS=1 -- "$@"
ROOT=$PWD

DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
THREADS=${BENCH_THREADS:-2}
CONNS=${BENCH_CONNECTIONS:-64}
ROUNDS=${BENCH_ROUNDS:-2}
IDLE=${BENCH_IDLE_CONNECTIONS:-5000}
HOLD_SECONDS=${BENCH_HOLD_SECONDS:-4}
EVENT_LOOPS=${BENCH_EVENT_LOOPS:-}
NGINX_WORKERS=${BENCH_NGINX_WORKERS:-2}

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" NIMBUS_PID="" NGINX_PID="" HOLD_PID="" DATA=""
cluster_dir() {  # where nimbus put its embedded PostgreSQL cluster
  if [ -f "$DATA/postgres-location" ]; then printf '%s/postgres' "$(cat "$DATA/postgres-location")"
  else printf '%s/postgres' "$DATA"; fi
}
cleanup() {
  local rc=$? pg_pid="" pg_dir="" children
  set +e
  stop_pid "$HOLD_PID" TERM 2
  if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
    children=$(cat /proc/"$NGINX_PID"/task/*/children 2>/dev/null)
    stop_pid "$NGINX_PID" TERM 10
    for pid in $children; do stop_pid "$pid" KILL 1; done
  fi
  if [ -n "$DATA" ]; then
    pg_dir=$(cluster_dir)
    [ -f "$pg_dir/postmaster.pid" ] && pg_pid=$(head -1 "$pg_dir/postmaster.pid")
  fi
  stop_pid "$NIMBUS_PID" TERM 30
  # A PostgreSQL left behind by a nimbus that had to be killed: fast shutdown by its PID.
  if [ -n "$pg_pid" ] && kill -0 "$pg_pid" 2>/dev/null && [ -f "$pg_dir/postmaster.pid" ]; then
    say "stopping leftover embedded PostgreSQL (pid $pg_pid)"
    kill -INT "$pg_pid" 2>/dev/null
    for ((i = 0; i < 100; i++)); do kill -0 "$pg_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pg_pid" 2>/dev/null && kill -QUIT "$pg_pid" 2>/dev/null
  fi
  if [ -n "$DATA" ] && [ -f "$DATA/postgres-location" ]; then
    loc=$(cat "$DATA/postgres-location")
    case "$loc" in /var/lib/nimbus/clusters/?*) rm -rf -- "$loc" ;; esac
  fi
  [ -n "$WORK" ] && rm -rf -- "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- 1. dependencies and build
if [ -z "${BENCH_SKIP_INSTALL:-}" ]; then
  extra=()
  command -v wrk >/dev/null 2>&1 || extra+=(wrk)
  if find_tool nginx >/dev/null; then
    bash deploy/install-deps.sh "${extra[@]}"
  else
    bash deploy/install-deps.sh "${extra[@]}" nginx-light || bash deploy/install-deps.sh "${extra[@]}" nginx
  fi
fi
WRK=$(command -v wrk || true)
NGINX=$(find_tool nginx || true)
[ -n "$WRK" ] || die "wrk is not installed"
[ -n "$NGINX" ] || die "nginx is not installed"
command -v curl >/dev/null || die "curl is not installed"

release_binary
# What was built: the commit, and whether Sources differed from it at build time.
rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
[ -z "$(git -C "$ROOT" status --porcelain -- Sources Package.swift 2>/dev/null)" ] || rev+=" + uncommitted changes in Sources"
[ -n "${BENCH_SKIP_BUILD:-}${BENCH_NIMBUS_BIN:-}" ] && rev="existing binary of $(date -r "$NIMBUS_BIN" '+%F %T') (build skipped; tree now: $rev)"

WORK=$(mktemp -d /tmp/nimbus-bench.XXXXXX)
chmod 755 "$WORK"  # PostgreSQL runs as an unprivileged user and must reach the data dir
DATA=$WORK/data
mkdir -p "$DATA"

CC_BIN=${CC:-}
[ -n "$CC_BIN" ] || CC_BIN=$(command -v cc || command -v clang || command -v gcc || true)
[ -n "$CC_BIN" ] || die "no C compiler (cc, clang or gcc) to build bench/holdconn.c"
"$CC_BIN" -O2 -o "$WORK/holdconn" bench/holdconn.c || die "cannot compile bench/holdconn.c"
HOLDCONN=$WORK/holdconn

# Enough descriptors for the servers and the connection holder (children inherit this).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
[ "$NOFILE" = unlimited ] && NOFILE=65536
((NOFILE >= IDLE + 200)) || say "warning: only $NOFILE file descriptors allowed; $IDLE idle connections may not fit"

# ---------------------------------------------------------------- helpers
rss_kb() { awk '/^VmRSS:/ {print $2; exit}' "/proc/$1/status" 2>/dev/null || echo 0; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}' || echo 0; }
server_pids() {  # the server's processes: nimbus itself; nginx master and workers
  if [ "$1" = nimbus ]; then echo "$NIMBUS_PID"
  else echo "$NGINX_PID"; cat /proc/"$NGINX_PID"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . || true; fi
}
server_rss() { local t=0 p; for p in $(server_pids "$1"); do t=$((t + $(rss_kb "$p"))); done; echo "$t"; }
server_cpu() { local t=0 p; for p in $(server_pids "$1"); do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }
server_port() { if [ "$1" = nimbus ]; then echo "$NIMBUS_PORT"; else echo "$NGINX_PORT"; fi; }
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)

# ---------------------------------------------------------------- 2. start nimbus and nginx
say "starting nimbus (data dir $DATA)"
"$NIMBUS_BIN" serve --listen 127.0.0.1:0 --data-dir "$DATA" ${EVENT_LOOPS:+--event-loops "$EVENT_LOOPS"} \
  </dev/null 2>"$WORK/nimbus.log" &
NIMBUS_PID=$!
NIMBUS_PORT=""
for ((i = 0; i < 1200; i++)); do
  NIMBUS_PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$WORK/nimbus.log" 2>/dev/null | head -1 | sed 's/.*://' || true)
  [ -n "$NIMBUS_PORT" ] && break
  alive
  sleep 0.1
done
[ -n "$NIMBUS_PORT" ] || die "nimbus did not print 'listening on' within 120 s; log tail:$(printf '\n'; tail -30 "$WORK/nimbus.log")"
NIMBUS_URL=http://127.0.0.1:$NIMBUS_PORT/limits
say "nimbus pid $NIMBUS_PID on port $NIMBUS_PORT"

curl -sS --max-time 5 -D "$WORK/nimbus.headers" -o "$WORK/limits.json" "$NIMBUS_URL" || die "GET $NIMBUS_URL failed"
head -1 "$WORK/nimbus.headers" | grep -q ' 200' || die "GET /limits: $(head -1 "$WORK/nimbus.headers")"
CONTENT_TYPE=$(awk -F': ' 'tolower($1)=="content-type" {sub(/\r$/, "", $2); print $2}' "$WORK/nimbus.headers")
[ -n "$CONTENT_TYPE" ] || CONTENT_TYPE="application/json; charset=utf-8"
BODY_BYTES=$(wc -c <"$WORK/limits.json")

NGX=$WORK/nginx
mkdir -p "$NGX/www" "$NGX/tmp"
cp "$WORK/limits.json" "$NGX/www/limits"
chmod -R a+rX "$NGX"
temp_paths="client_body_temp_path $NGX/tmp/body; proxy_temp_path $NGX/tmp/proxy;"
for m in fastcgi uwsgi scgi; do
  "$NGINX" -V 2>&1 | grep -q -- "--without-http_${m}_module" || temp_paths+=" ${m}_temp_path $NGX/tmp/$m;"
done
# The body inline ('return 200') when nginx can take it verbatim; else served as a cached static file.
if LC_ALL=C grep -q "['\\\$]" "$WORK/limits.json" || [ "$(wc -l <"$WORK/limits.json")" -gt 0 ]; then
  location="default_type \"$CONTENT_TYPE\"; root $NGX/www; etag off;"
  location+=" open_file_cache max=16 valid=600s;"
else
  location="default_type \"$CONTENT_TYPE\"; return 200 '$(cat "$WORK/limits.json")';"
fi
NGINX_PORT=""
for attempt in 1 2 3 4 5; do
  NGINX_PORT=$("$HOLDCONN" freeport)
  cat >"$NGX/nginx.conf" <<EOF
worker_processes $NGINX_WORKERS;
worker_rlimit_nofile $NOFILE;
pid $NGX/nginx.pid;
error_log $NGX/error.log warn;
events { worker_connections 16384; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 65s;
  server_tokens off;
  $temp_paths
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location = /limits { $location }
    location / { return 404; }
  }
}
EOF
  "$NGINX" -p "$NGX" -c "$NGX/nginx.conf" -g 'daemon off;' </dev/null >"$NGX/stdout" 2>"$NGX/stderr" &
  NGINX_PID=$!
  ok=""
  for ((i = 0; i < 100; i++)); do
    kill -0 "$NGINX_PID" 2>/dev/null || break
    if curl -s --max-time 2 -o /dev/null "http://127.0.0.1:$NGINX_PORT/limits"; then ok=1; break; fi
    sleep 0.1
  done
  [ -n "$ok" ] && break
  stop_pid "$NGINX_PID" TERM 5; NGINX_PID=""
  say "nginx did not start on port $NGINX_PORT (attempt $attempt): $(tail -3 "$NGX/stderr" "$NGX/error.log" 2>/dev/null | tr '\n' ' ')"
done
[ -n "$NGINX_PID" ] || die "nginx would not start"
NGINX_URL=http://127.0.0.1:$NGINX_PORT/limits
curl -sS --max-time 5 -D "$WORK/nginx.headers" -o "$WORK/nginx.body" "$NGINX_URL"
cmp -s "$WORK/limits.json" "$WORK/nginx.body" || die "nginx does not serve the same /limits bytes"
grep -qi "^content-type: $CONTENT_TYPE" "$WORK/nginx.headers" || die "nginx Content-Type differs: $(grep -i content-type "$WORK/nginx.headers")"
say "nginx pid $NGINX_PID (workers: $(server_pids nginx | tail -n +2 | tr '\n' ' ')) on port $NGINX_PORT"
say "same body ($BODY_BYTES bytes, $CONTENT_TYPE); response headers:"
for s in nimbus nginx; do
  printf '  %-6s %s\n' "$s" "$(tr -d '\r' <"$WORK/$s.headers" | sed 's/^\([Dd]ate:\).*/\1 <now>/' | grep . | paste -sd'|' | sed 's/|/ | /g')" >&2
done

# ---------------------------------------------------------------- 3. throughput and latency
to_ms() { awk -v v="$1" 'BEGIN {
  if (v ~ /us$/) x = v / 1000; else if (v ~ /ms$/) x = v + 0; else if (v ~ /m$/) x = v * 60000;
  else if (v ~ /s$/) x = v * 1000; else x = -1; printf "%.3f", x }'; }
wrk_field() {  # wrk_field FILE rps|p50|p90|p99|requests|sockerr|non2xx
  case $2 in
    rps) awk '/^Requests\/sec:/ {print $2}' "$1" ;;
    p50|p90|p99) to_ms "$(awk -v q="${2#p}%" '$1 == q {print $2; exit}' "$1")" ;;
    requests) awk '/requests in/ {print $1; exit}' "$1" ;;
    sockerr) awk -F'Socket errors: ' 'NF > 1 {print $2}' "$1" ;;
    non2xx) awk -F': *' '/Non-2xx or 3xx responses/ {print $2}' "$1" ;;
  esac
}
# CPU seconds of this shell's waited-for children (wrk): 'times' must run in this shell, not in $(...).
children_cpu_s() {
  times >"$WORK/times"
  tail -1 "$WORK/times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%.3f", t }'
}
run_wrk() {  # run_wrk SERVER DURATION OUTFILE; OUTFILE.cpu: "server_ticks wrk_seconds machine_busy_ticks wall_seconds"
  local url cpu0 cpu1 wrk0 wrk1 busy0 busy1 t0 t1
  if [ "$1" = nimbus ]; then url=$NIMBUS_URL; else url=$NGINX_URL; fi
  children_cpu_s >"$3.wrk0"; cpu0=$(server_cpu "$1"); busy0=$(machine_busy); t0=$(date +%s.%N)
  timeout 120 "$WRK" -t"$THREADS" -c"$CONNS" -d"$2" --latency "$url" >"$3" 2>&1 || say "wrk exited $? for $1"
  cpu1=$(server_cpu "$1"); busy1=$(machine_busy); t1=$(date +%s.%N); children_cpu_s >"$3.wrk1"
  wrk0=$(cat "$3.wrk0"); wrk1=$(cat "$3.wrk1")
  echo "$((cpu1 - cpu0)) $(awk -v a="$wrk0" -v b="$wrk1" 'BEGIN {print b - a}') $((busy1 - busy0))" \
       "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" >"$3.cpu"
  [ "$1" = nimbus ] && alive
  return 0
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
say "load average before: $load_before"
say "warm-up: ${WARMUP} each"
run_wrk nimbus "$WARMUP" "$WORK/warm-nimbus.txt"
run_wrk nginx "$WARMUP" "$WORK/warm-nginx.txt"

results=()  # "server round rps p50 p90 p99 requests cpu_ticks sockerr non2xx"
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2 == 1)); then order=(nimbus nginx); else order=(nginx nimbus); fi
  for s in "${order[@]}"; do
    say "round $r: wrk -t$THREADS -c$CONNS -d$DURATION --latency against $s"
    f=$WORK/wrk-$s-$r.txt
    run_wrk "$s" "$DURATION" "$f"
    rps=$(wrk_field "$f" rps); [ -n "$rps" ] || { cat "$f" >&2; die "could not parse wrk output for $s"; }
    results+=("$s $r $rps $(wrk_field "$f" p50) $(wrk_field "$f" p90) $(wrk_field "$f" p99) $(wrk_field "$f" requests) $(cat "$f.cpu")")
    set -- $(cat "$f.cpu")
    say "  $s: $rps req/s, p99 $(wrk_field "$f" p99) ms; CPU cores used: server $(awk -v t="$1" -v w="$4" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", t / hz / w}')," \
        "wrk $(awk -v c="$2" -v w="$4" 'BEGIN {printf "%.2f", c / w}')," \
        "everything else $(awk -v t="$1" -v c="$2" -v b="$3" -v w="$4" -v hz="$CLK_TCK" 'BEGIN {x = (b - t) / hz - c; printf "%.2f", (x < 0 ? 0 : x) / w}')"
    sockerr=$(wrk_field "$f" sockerr); non2xx=$(wrk_field "$f" non2xx)
    eval "sockerr_${s}_$r=\"\$sockerr\"; non2xx_${s}_$r=\"\$non2xx\""
    if [ -n "$sockerr" ] || [ -n "$non2xx" ]; then
      say "$s round $r: wrk reported errors: ${sockerr:+socket errors: $sockerr }${non2xx:+non-2xx/3xx: $non2xx}"
    fi
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
say "load average after: $load_after"

mean() {  # mean SERVER FIELD(3=rps 4=p50 5=p90 6=p99 7=requests 8=cpu)
  printf '%s\n' "${results[@]}" | awk -v s="$1" -v f="$2" '$1 == s {t += $f; n++} END {printf "%.3f", (n ? t / n : 0)}'
}
for s in nimbus nginx; do
  eval "${s}_rps=\$(mean $s 3) ${s}_p50=\$(mean $s 4) ${s}_p90=\$(mean $s 5) ${s}_p99=\$(mean $s 6)"
  eval "${s}_req=\$(mean $s 7) ${s}_cpu=\$(mean $s 8)"
done
# Server CPU per request (µs): CPU ticks used by the server's processes during the run / requests.
cpu_us() { awk -v t="$1" -v n="$2" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", (n > 0 ? t / hz * 1e6 / n : 0)}'; }
nimbus_cpu_us=$(cpu_us "$nimbus_cpu" "$nimbus_req"); nginx_cpu_us=$(cpu_us "$nginx_cpu" "$nginx_req")
dur_s=$(awk -v d="$DURATION" 'BEGIN {printf "%g", (d ~ /m$/ ? d * 60 : d + 0)}')
nimbus_cores=$(awk -v t="$nimbus_cpu" -v hz="$CLK_TCK" -v d="$dur_s" 'BEGIN {printf "%.2f", t / hz / d}')
nginx_cores=$(awk -v t="$nginx_cpu" -v hz="$CLK_TCK" -v d="$dur_s" 'BEGIN {printf "%.2f", t / hz / d}')
ratio=$(awk -v a="$nimbus_rps" -v b="$nginx_rps" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
# CPU per request does not depend on how the 2 cores were shared with wrk or with other people's work.
cpu_ratio=$(awk -v a="$nimbus_cpu_us" -v b="$nginx_cpu_us" 'BEGIN {printf "%.2f", (a > 0 ? b / a : 0)}')
cpu_times=$(awk -v a="$nimbus_cpu_us" -v b="$nginx_cpu_us" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
# Runs during which other processes (not the server, not wrk) used more than 0.2 cores.
contended=$(printf '%s\n' "${results[@]}" | awk -v hz="$CLK_TCK" '{x = (($10 - $8) / hz - $9) / $11; if (x > 0.2) printf "%s%s round %s (%.2f cores)", n++ ? ", " : "", $1, $2, x}')

nimbus_errors=""
for ((r = 1; r <= ROUNDS; r++)); do
  eval "se=\$sockerr_nimbus_$r; nx=\$non2xx_nimbus_$r"
  [ -n "$se$nx" ] && nimbus_errors+="round $r: ${se:+socket errors: $se; }${nx:+non-2xx/3xx: $nx; }"
done

# ---------------------------------------------------------------- 4. memory per idle keep-alive connection
hold_test() {  # hold_test SERVER [NAME] -> sets <NAME>_mem_* variables (NAME defaults to SERVER)
  local s=$1 v=${2:-$1} port before during after_close out err open_gauge="" line opened failed alive_n closed_n
  port=$(server_port "$s")
  sleep 1
  before=$(server_rss "$s")
  out=$WORK/hold-$v.out; err=$WORK/hold-$v.err
  say "$v: opening $IDLE idle keep-alive connections (one GET /limits each), holding ${HOLD_SECONDS}s"
  "$HOLDCONN" hold 127.0.0.1 "$port" "$IDLE" "$HOLD_SECONDS" /limits >"$out" 2>"$err" &
  HOLD_PID=$!
  for ((i = 0; i < 600; i++)); do grep -q '^ready' "$out" 2>/dev/null && break; kill -0 "$HOLD_PID" 2>/dev/null || break; sleep 0.1; done
  grep -q '^ready' "$out" || { cat "$err" >&2; die "connection holder did not finish opening connections for $s"; }
  sleep 1.5
  during=$(server_rss "$s")
  if [ "$s" = nimbus ]; then
    open_gauge=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics" | awk '/^nimbus_http_open_connections/ {print $2}')
  fi
  wait "$HOLD_PID" || true
  HOLD_PID=""
  sleep 1
  after_close=$(server_rss "$s")
  line=$(grep '^opened' "$out"); opened=$(echo "$line" | awk '{print $2}'); failed=$(echo "$line" | awk '{print $4}')
  alive_n=$(awk '/^alive/ {print $2}' "$out"); closed_n=$(awk '/^alive/ {print $4}' "$out")
  [ -s "$err" ] && say "$s holder errors: $(tr '\n' ' ' <"$err")"
  eval "${v}_mem_before=$before ${v}_mem_during=$during ${v}_mem_after=$after_close"
  eval "${v}_mem_opened=${opened:-0} ${v}_mem_failed=${failed:-?} ${v}_mem_open_ms=$(echo "$line" | awk '{print $8}')"
  eval "${v}_mem_alive=${alive_n:-?} ${v}_mem_closed=${closed_n:-?} ${v}_mem_gauge=\"$open_gauge\""
  eval "${v}_kb_per_conn=$(awk -v a="$during" -v b="$before" -v n="${opened:-0}" 'BEGIN {printf "%.2f", (n > 0 ? (a - b) / n : 0)}')"
  say "$v: RSS ${before} KB -> ${during} KB with ${opened:-0} idle connections -> ${after_close} KB after closing" \
      "(failed ${failed:-?}, still open at the end ${alive_n:-?}, closed by server ${closed_n:-?}${open_gauge:+, nimbus_http_open_connections=$open_gauge})"
}
hold_test nimbus
alive
# A second cycle: RSS that grows again by as much points to a leak; flat means memory is reused.
hold_test nimbus nimbus2
alive
hold_test nginx

# ---------------------------------------------------------------- server health and shutdown
alive
problem_pattern='^(warning|error) |"level":"(warning|error)"|Fatal error|panic|Segmentation fault|Illegal instruction'
nimbus_log_problem_count=$(grep -cE "$problem_pattern" "$WORK/nimbus.log" || true)
nimbus_log_problems=$(grep -m 8 -E "$problem_pattern" "$WORK/nimbus.log" | cut -c1-300 || true)
nimbus_log_lines=$(wc -l <"$WORK/nimbus.log")
nginx_log_problems=$(grep -m 5 -E '\[(error|crit|alert|emerg)\]' "$NGX/error.log" 2>/dev/null || true)
rss_peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$NIMBUS_PID/status")
threads=$(awk '/^Threads:/ {print $2}' "/proc/$NIMBUS_PID/status")
t0=$(date +%s.%N)
kill -TERM "$NIMBUS_PID"
nimbus_rc=0
for ((i = 0; i < 300; i++)); do kill -0 "$NIMBUS_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$NIMBUS_PID" 2>/dev/null; then nimbus_rc="did not stop in 30 s"; stop_pid "$NIMBUS_PID" KILL 1
else wait "$NIMBUS_PID" || nimbus_rc=$?; fi
stop_secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
NIMBUS_PID=""
stop_pid "$NGINX_PID" TERM 10; NGINX_PID=""

# ---------------------------------------------------------------- 5. report
set +e +o pipefail
verdict() { if awk "BEGIN {exit !($1)}"; then echo ok; else echo MISSED; fi; }
{
  echo
  echo "Per run (wrk -t$THREADS -c$CONNS -d$DURATION --latency, GET /limits, $BODY_BYTES-byte body):"
  echo "  (cores: CPU used during the run by the server, by wrk, and by everything else on the machine)"
  printf '  %-7s %5s %12s %9s %9s %9s %10s %9s %9s %11s\n' server round req/s p50_ms p90_ms p99_ms cpu_us/req srv_cores wrk_cores other_cores
  for row in "${results[@]}"; do
    set -- $row
    printf '  %-7s %5s %12.0f %9.3f %9.3f %9.3f %10s %9s %9s %11s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$(cpu_us "$8" "$7")" \
      "$(awk -v t="$8" -v w="${11}" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", t / hz / w}')" \
      "$(awk -v c="$9" -v w="${11}" 'BEGIN {printf "%.2f", c / w}')" \
      "$(awk -v t="$8" -v c="$9" -v b="${10}" -v w="${11}" -v hz="$CLK_TCK" 'BEGIN {x = (b - t) / hz - c; printf "%.2f", (x < 0 ? 0 : x) / w}')"
  done
  echo
  echo "================ Nimbus HTTP benchmark summary ================"
  echo "machine: $(nproc) cores, kernel $(uname -r); load average before $load_before, after $load_after"
  echo "nimbus build: $rev"
  echo "tools: $("$WRK" -v 2>&1 | head -1 | awk '{print $1, $2}'), $("$NGINX" -v 2>&1 | sed 's/.*: //') ($NGINX_WORKERS workers, access_log off)," \
       "nimbus event loops: ${EVENT_LOOPS:-default (= cores)}, threads: $threads"
  echo "load: wrk -t$THREADS -c$CONNS -d$DURATION --latency, warm-up $WARMUP, rounds $ROUNDS, GET /limits ($BODY_BYTES bytes)"
  printf '  %-7s %12s %9s %9s %9s %12s %14s\n' server req/s p50_ms p90_ms p99_ms cpu_us/req "server cores"
  printf '  %-7s %12.0f %9.3f %9.3f %9.3f %12s %14s\n' nimbus "$nimbus_rps" "$nimbus_p50" "$nimbus_p90" "$nimbus_p99" "$nimbus_cpu_us" "$nimbus_cores"
  printf '  %-7s %12.0f %9.3f %9.3f %9.3f %12s %14s\n' nginx "$nginx_rps" "$nginx_p50" "$nginx_p90" "$nginx_p99" "$nginx_cpu_us" "$nginx_cores"
  echo "  ratio nimbus/nginx req/s: $ratio (target >= 0.8: $(verdict "$ratio >= 0.8"))"
  echo "  CPU per request nimbus/nginx: $cpu_times (target <= 1.2: $(verdict "$cpu_times <= 1.2"))"
  echo "  CPU efficiency nimbus vs nginx (nginx cpu_us/req / nimbus cpu_us/req): $cpu_ratio"
  echo "  runs disturbed by other load on the machine: ${contended:-none}"
  echo "  nimbus p99: ${nimbus_p99} ms (target < 10 ms: $(verdict "$nimbus_p99 < 10"))"
  echo "  wrk errors for nimbus: ${nimbus_errors:-none}"
  echo "memory: $IDLE idle keep-alive connections, each after one GET /limits, held ${HOLD_SECONDS}s (RSS, /proc VmRSS)"
  printf '  %-7s %10s %10s %12s %8s %8s %7s %9s\n' server before_KB held_KB after_close_KB KB/conn opened failed open_ms
  for s in nimbus nginx; do
    v=()
    for f in mem_before mem_during mem_after kb_per_conn mem_opened mem_failed mem_open_ms; do n=${s}_$f; v+=("${!n}"); done
    printf '  %-7s %10s %10s %12s %8s %8s %7s %9s\n' "$s" "${v[@]}"
  done
  echo "  nimbus KB/connection: $nimbus_kb_per_conn (target <= 2: $(verdict "$nimbus_kb_per_conn <= 2")); nginx: $nginx_kb_per_conn (master + workers)"
  echo "  nimbus second cycle: RSS $nimbus2_mem_before -> $nimbus2_mem_during KB held ($nimbus2_kb_per_conn KB/conn)" \
       "-> $nimbus2_mem_after KB after closing (first cycle ended at $nimbus_mem_after KB; opened in $nimbus2_mem_open_ms ms)"
  echo "  still open after the hold: nimbus $nimbus_mem_alive/$nimbus_mem_opened (server-side gauge during hold: ${nimbus_mem_gauge:-?})," \
       "nginx $nginx_mem_alive/$nginx_mem_opened"
  echo "nimbus: peak RSS ${rss_peak} KB; SIGTERM -> exit ${nimbus_rc} in ${stop_secs}s"
  if [ "${nimbus_log_problem_count:-0}" -gt 0 ]; then
    echo "nimbus log warnings/errors: $nimbus_log_problem_count of $nimbus_log_lines lines; first ones:"
    printf '%s\n' "$nimbus_log_problems" | sed 's/^/  /'
  else
    echo "nimbus log warnings/errors: none ($nimbus_log_lines log lines in all)"
  fi
  [ -n "$nginx_log_problems" ] && { echo "nginx error.log:"; printf '%s\n' "$nginx_log_problems" | sed 's/^/  /'; }
  echo "==============================================================="
}
