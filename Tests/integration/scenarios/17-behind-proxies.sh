#!/usr/bin/env bash
# Behind the shipped proxies (deploy/nginx.conf, deploy/haproxy.cfg; Tests/integration/proxies.sh
# templates only ports, server lines and paths): three `nimbus serve` instances on one database,
# nginx and HAProxy both in front of all three over TLS, at the same time.
#  - 55 s long-polls through each proxy answer 200 at 55 s (not cut, no 502/504), and their
#    heartbeat spaces (every 20 s) reach the client within 1 s of their schedule, not at the end;
#    a direct waiter runs beside them as the control.
#  - a write sent directly to any instance wakes a waiter parked through a proxy, and a write sent
#    through a proxy wakes a waiter parked directly on each instance, within 1 s (both proxies).
#  - a 50 MiB asset goes up and comes down through each proxy byte-identical, with absolute URLs
#    that name the proxy (https, its port), without the proxy buffering it (no nginx temp file, no
#    "buffered to a temporary file" warning, proxy and server memory well below 50 MiB); Range
#    requests through each proxy are 206 with the right bytes.
#  - SIGTERM to one instance while the no-missed-change checker (Tests/soak/nmcheck.c) writes and
#    reads through both proxies, waiters are parked and downloads are in flight through them: the
#    parked waiters are answered 200 (empty, same token) at once, the downloads finish, no client
#    sees an error or a 5xx, the checker finds nothing lost or missed, the other instances serve
#    what follows, and the stopped instance exits 0.
# The instances trust 127.0.0.1 as a proxy (--trusted-proxy), as a deployment behind these configs
# must (or set --public-url), so that the URLs they hand out name https and the proxy's host:port.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../proxies.sh"

# nmcheck speaks plain HTTP only, so it is built now and talks to a test-only plain listener of
# each proxy (NGINX_PLAIN_PORT / HAPROXY_PLAIN_PORT): same server block / frontend and proxying
# config as the TLS listener, which everything else in this scenario uses.
cc_bin=${CC:-$(command -v cc || command -v clang || command -v gcc || true)}
[ -n "$cc_bin" ] || fail "no C compiler (cc, clang or gcc) for Tests/soak/nmcheck.c"
"$cc_bin" -O2 -pthread -o "$TEST_TMP/nmcheck" "$REPO_DIR/Tests/soak/nmcheck.c" 2>"$TEST_TMP/cc.log" &
CC_PID=$!

SERVE_ARGS=(--trusted-proxy 127.0.0.1/32 --requests-per-second-per-token 0)
start_store_server "${SERVE_ARGS[@]}"
URLS=("$NIMBUS_URL") PORTS=("$NIMBUS_PORT") PIDS=("$NIMBUS_PID") LOGS=("$NIMBUS_LOG")
for _ in 2 3; do
  start_nimbus --database-url "$NIMBUS_DB_URL" "${SERVE_ARGS[@]}"
  URLS+=("$NIMBUS_URL") PORTS+=("$NIMBUS_PORT") PIDS+=("$NIMBUS_PID") LOGS+=("$NIMBUS_LOG")
done
NIMBUS_URL=${URLS[0]} NIMBUS_LOG=${LOGS[0]}
NGINX_PLAIN_PORT=$(free_port) HAPROXY_PLAIN_PORT=$(free_port)
start_nginx "$(free_port)" "${PORTS[@]}"
start_haproxy "$(free_port)" "${PORTS[@]}"
PROXIES=("$NGINX_URL" "$HAPROXY_URL")
declare -A PROXY_NAME=(["$NGINX_URL"]=nginx ["$HAPROXY_URL"]=haproxy)

nimbus_admin user add alice >/dev/null
for device in MAC WATCH POLL_N POLL_H POLL_D PARK_N PARK_H; do issue_token "$device" alice "${device,,}"; done
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Quiet"}}},{"operationType":"create","zone":{"zoneID":{"zoneName":"Wake"}}}]}'
api_ok "$WATCH" records/changes '{"zoneID":{"zoneName":"Quiet"}}'
QUIET_TOKEN=$(json_last_field syncToken)
api_ok "$WATCH" records/changes '{"zoneID":{"zoneName":"Wake"}}'
WAKE_TOKEN=$(json_last_field syncToken)

# failures_so_far: how many expectations failed until now (fail_later's list).
failures_so_far() { if [ -f "$TEST_TMP/.failures" ]; then wc -l <"$TEST_TMP/.failures"; else echo 0; fi; }

# total_waiters: parked long-polls over the running instances (their nimbus_longpoll_waiters).
total_waiters() {
  local sum=0 i value
  for i in "${!URLS[@]}"; do
    process_alive "${PIDS[$i]}" || continue
    value=$(metric nimbus_longpoll_waiters "${URLS[$i]}")
    sum=$((sum + ${value:-0}))
  done
  echo "$sum"
}

# wait_waiters COUNT SECONDS: total_waiters reaches COUNT; status 1 when not in time.
wait_waiters() {
  local deadline=$(( $(now_ms) + $2 * 1000 ))
  while [ "$(total_waiters)" != "$1" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# timed_poll NAME BASE TOKEN: a wait-55 records/changes of zone Quiet through BASE in the
# background; every body byte is logged with its arrival time (`µs code` lines in
# $TEST_TMP/tp-NAME/bytes), curl's status and time to the headers follow the body.
declare -A TP_PIDS=()
timed_poll() {
  local dir=$TEST_TMP/tp-$1
  mkdir -p "$dir"
  (
    echo "${EPOCHREALTIME/./}" >"$dir/start"
    curl -sS -N --max-time 70 -X POST -H "Authorization: Bearer $3" -H 'Content-Type: application/json' \
      --data-binary "{\"zoneID\":{\"zoneName\":\"Quiet\"},\"syncToken\":\"$QUIET_TOKEN\",\"wait\":55}" \
      -w '\n%{http_code} %{time_starttransfer}' "$2$(api_path records/changes)" 2>"$dir/stderr" |
      while IFS= read -r -d '' -N 1 c; do printf '%s %d\n' "${EPOCHREALTIME/./}" "'$c"; done >"$dir/bytes"
  ) &
  TP_PIDS[$1]=$!
  track_pid "$!"
}

# check_timed_poll NAME WHAT: the poll answered 200 after 55 s with two heartbeat spaces, each
# within 1 s of headers + 20 s × k, then the empty answer with the request's token.
check_timed_poll() {
  local dir=$TEST_TMP/tp-$1 what=$2 start text status first body headers_us answered took before k at late beats=()
  wait_exit "${TP_PIDS[$1]}" 75 || true
  start=$(cat "$dir/start")
  text=$(awk '{printf "%c", $2}' "$dir/bytes")
  read -r status first <<<"${text##*$'\n'}"
  body=${text%$'\n'*}
  headers_us=$(( start + $(awk -v f="$first" 'BEGIN {printf "%d", f * 1000000}') ))
  mapfile -t beats < <(awk '$2 != 32 {exit} {print $1}' "$dir/bytes")
  answered=$(awk '$2 != 32 {print $1; exit}' "$dir/bytes")
  took=$(( (${answered:-0} - start) / 1000 ))
  [ "$status" = 200 ] || { fail_later "$what: status '$status' after ${took} ms ($(cat "$dir/stderr")): ${body:0:200}"; return; }
  before=$(failures_so_far)
  [ "$took" -ge 54500 ] && [ "$took" -le 57500 ] || fail_later "$what: the answer came ${took} ms after the request (expected about 55 s)"
  [[ $body =~ ^\ +\{.*\"records\":\[\].*\}$ ]] && [ "$(json_last_field syncToken "$body")" = "$QUIET_TOKEN" ] \
    || fail_later "$what: not heartbeats then the empty answer with the request's token: '${body:0:300}'"
  [ "${#beats[@]}" = 2 ] || fail_later "$what: ${#beats[@]} heartbeat spaces in 55 s at a 20 s heartbeat (expected 2)"
  [ "$(failures_so_far)" = "$before" ] && ok "$what: 200 after ${took} ms, 2 heartbeat spaces, then the empty answer with the request's token"
  late="" at=""
  for k in "${!beats[@]}"; do
    at+="${at:+, }$(( (beats[k] - headers_us) / 1000 ))"
    [ $(( (beats[k] - headers_us) / 1000 - 20000 * (k + 1) )) -le 1000 ] && [ $(( (beats[k] - headers_us) / 1000 - 20000 * (k + 1) )) -ge -1000 ] \
      || late=1
  done
  [ -z "$late" ] || { fail_later "$what: heartbeats arrived at $at ms after the headers, sent at 20000, 40000: buffered?"; return; }
  ok "$what: heartbeats arrive as sent ($at ms after the headers)"
}

note "55 s long-polls through nginx and HAProxy, and a direct control on instance 1"
timed_poll nginx "$NGINX_URL" "$POLL_N"
timed_poll haproxy "$HAPROXY_URL" "$POLL_H"
timed_poll direct "${URLS[0]}" "$POLL_D"
wait_waiters 3 10 || fail "the three 55 s long-polls did not park (waiters: $(total_waiters))"
POLLS_PARKED=$(now_ms)
ok "the three 55 s long-polls are parked"

note "wake-ups across instances, through both proxies"
WAKE_N=0
# wake_round WAIT_BASE WRITE_BASE WHAT: a waiter (zone Wake) parked through WAIT_BASE is woken by a
# record written through WRITE_BASE within 1 s, and answers with that record.
wake_round() {
  local name before sent ms
  WAKE_N=$((WAKE_N + 1)) name=wake-$WAKE_N
  before=$(total_waiters)
  lp_start "$name" "$WATCH" records/changes "{\"zoneID\":{\"zoneName\":\"Wake\"},\"syncToken\":\"$WAKE_TOKEN\",\"wait\":20}" "$1"
  wait_waiters $((before + 1)) 5 || fail "$3: the waiter did not park (waiters: $(total_waiters), before $before)"
  sent=$(now_us)
  NIMBUS_URL=$2 api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Wake\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"$name\",\"recordType\":\"Event\",\"fields\":{\"n\":{\"value\":$WAKE_N}}}}]}"
  lp_finish "$name" 20
  ms=$(( (LP_DONE_US - sent) / 1000 ))
  [ "$LP_STATUS" = 200 ] && [ "$(record_summary "$LP_BODY" | cut -d' ' -f1)" = "$name" ] \
    || fail "$3: answered $LP_STATUS without $name: ${LP_BODY:0:300}"
  WAKE_TOKEN=$(json_last_field syncToken "$LP_BODY")
  [ "$ms" -lt 1000 ] || { fail_later "$3: woken ${ms} ms after the write was sent (limit 1000)"; return; }
  ok "$3: woken ${ms} ms after the write"
}
for proxy in "${PROXIES[@]}"; do
  for i in "${!URLS[@]}"; do
    wake_round "$proxy" "${URLS[$i]}" "${PROXY_NAME[$proxy]}: waiter through the proxy, write directly on instance $((i + 1))"
    wake_round "${URLS[$i]}" "$proxy" "${PROXY_NAME[$proxy]}: waiter directly on instance $((i + 1)), write through the proxy"
  done
done

note "a 50 MiB asset up and down through each proxy, and Range requests"
random_file "$TEST_TMP/big" 52428800
NGINX_WORKER=$(children_of "$NGINX_PID" | head -n 1)
[ -n "$NGINX_WORKER" ] || fail "no nginx worker process under $NGINX_PID"
# sample_temp_files: every 50 ms, nginx's open temp files (unlinked at once, so only its fds show
# them) as `size path` lines in $TEST_TMP/temp-fds, until $TEST_TMP/stop-sampling exists.
sample_temp_files() {
  local fd
  while [ ! -e "$TEST_TMP/stop-sampling" ]; do
    for fd in /proc/"$NGINX_WORKER"/fd/*; do
      case $(readlink "$fd" 2>/dev/null) in
        "$NGINX_DIR"/*temp*) printf '%s %s\n' "$(stat -L -c %s "$fd" 2>/dev/null)" "$(readlink "$fd")" ;;
      esac
    done
    sleep 0.05
  done >"$TEST_TMP/temp-fds"
}
declare -A HWM_BEFORE=()
for pid in "${PIDS[@]}" "$NGINX_WORKER" "$HAPROXY_PID"; do HWM_BEFORE[$pid]=$(vm_kib "$pid" VmHWM); done
sample_temp_files &
SAMPLER=$!
track_pid "$SAMPLER"
# expect_range URL SPEC FIRST LAST WHAT: 206, Content-Range, bytes FIRST..LAST of the big file.
expect_range() {
  asset_get "$MAC" "$1" "$TEST_TMP/part" -H "Range: $2"
  [ "$HTTP_STATUS" = 206 ] && [ "$(header_value Content-Range)" = "bytes $3-$4/52428800" ] \
    || fail "$5: Range: $2 answered $HTTP_STATUS, Content-Range '$(header_value Content-Range)'"
  byte_slice "$TEST_TMP/big" "$3" $(($4 - $3 + 1)) "$TEST_TMP/part-want"
  expect_same_file "$TEST_TMP/part-want" "$TEST_TMP/part" "$5: Range: $2"
}
for proxy in "${PROXIES[@]}"; do
  name=${PROXY_NAME[$proxy]}
  started=$(now_ms)
  NIMBUS_URL=$proxy upload_asset "$MAC" "$TEST_TMP/big"
  up_ms=$(( $(now_ms) - started ))
  NIMBUS_URL=$proxy api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"forceUpdate\",\"record\":{\"recordName\":\"big-$name\",\"recordType\":\"Blob\",\"fields\":{\"data\":$UP_FIELD}}}]}"
  url=$(asset_member "big-$name" data downloadURL) || fail "$name: no downloadURL in ${HTTP_BODY:0:300}"
  [[ $url == "$proxy"/assets/* ]] || fail "$name: downloadURL $url does not name the proxy ($proxy)"
  started=$(now_ms)
  asset_get "$MAC" "$url" "$TEST_TMP/down-$name"
  expect_status 200 "$name: download"
  expect_same_file "$TEST_TMP/big" "$TEST_TMP/down-$name" "$name: download of 50 MiB"
  ok "$name: 50 MiB uploaded in $up_ms ms and downloaded in $(( $(now_ms) - started )) ms through the proxy, byte-identical; upload URL and downloadURL name $proxy"
  expect_range "$url" "bytes=1000-1999" 1000 1999 "$name"
  expect_range "$url" "bytes=262140-262150" 262140 262150 "$name"
  expect_range "$url" "bytes=-4096" $((52428800 - 4096)) 52428799 "$name"
  ok "$name: Range requests (1000-1999, across a chunk boundary, the last 4096 bytes) are 206 with the right bytes"
done
touch "$TEST_TMP/stop-sampling"
wait "$SAMPLER"
before=$(failures_so_far)
[ ! -s "$TEST_TMP/temp-fds" ] || fail_later "nginx buffered to temp files (size path): $(sort -n "$TEST_TMP/temp-fds" | tail -n 3 | tr '\n' ' ')"
warned=$(grep -a 'buffered to a temporary file' "$NGINX_DIR/error.log" | head -n 2)
[ -z "$warned" ] || fail_later "nginx logged buffering to disk: $warned"
leftovers=$(find "$NGINX_DIR"/*temp* -type f 2>/dev/null | head -n 3)
[ -z "$leftovers" ] || fail_later "files in nginx's temp directories: $leftovers"
[ "$(failures_so_far)" = "$before" ] \
  && ok "nginx opened no file in client_body_temp or proxy_temp (sampled every 50 ms) and logged no buffering to disk"
rises="" before=$(failures_so_far)
declare -A LABEL=(["${PIDS[0]}"]="instance 1" ["${PIDS[1]}"]="instance 2" ["${PIDS[2]}"]="instance 3" ["$NGINX_WORKER"]="nginx worker" ["$HAPROXY_PID"]=haproxy)
for pid in "${PIDS[@]}" "$NGINX_WORKER" "$HAPROXY_PID"; do
  rise=$(( ($(vm_kib "$pid" VmHWM) - HWM_BEFORE[$pid]) / 1024 ))
  rises+="${rises:+, }${LABEL[$pid]} +${rise} MiB"
  [ "$rise" -lt 20 ] || fail_later "${LABEL[$pid]}: peak memory (VmHWM) rose by ${rise} MiB while 4 × 50 MiB went through (buffered?)"
done
[ "$(failures_so_far)" = "$before" ] && ok "peak memory (VmHWM) while 4 × 50 MiB went through: $rises"

note "the 55 s long-polls ($(( ($(now_ms) - POLLS_PARKED) / 1000 )) s so far)"
check_timed_poll nginx "nginx: 55 s long-poll"
check_timed_poll haproxy "haproxy: 55 s long-poll"
check_timed_poll direct "direct control: 55 s long-poll"

note "SIGTERM to instance 2 while the checker, parked waiters and downloads run through both proxies"
wait "$CC_PID" || fail "cannot compile Tests/soak/nmcheck.c: $(cat "$TEST_TMP/cc.log")"
nimbus_admin user add checker >/dev/null
issuers=()
for k in 1 2 3 4 5 6; do ( issue_token T checker "checker-$k"; echo "$T" >>"$TEST_TMP/checker-tokens" ) & issuers+=("$!"); done
for pid in "${issuers[@]}"; do wait "$pid"; done
[ "$(wc -l <"$TEST_TMP/checker-tokens")" = 6 ] || fail "token issue for the checker failed"
random_file "$TEST_TMP/slow" 3145728
upload_asset "$MAC" "$TEST_TMP/slow"
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"slow\",\"recordType\":\"Blob\",\"fields\":{\"data\":$UP_FIELD}}}]}"
SLOW_PATH=/assets/$(asset_member slow data downloadURL | sed 's#^.*/assets/##')
VICTIM=1 VICTIM_PID=${PIDS[1]}
timeout 120 "$TEST_TMP/nmcheck" -p "$NGINX_PLAIN_PORT,$HAPROXY_PLAIN_PORT" -d "$(api_path x | sed 's#/x$##')" \
  -t "$TEST_TMP/checker-tokens" -w 12 -r 6 -s 18 -z Checker >"$TEST_TMP/nmcheck.out" 2>"$TEST_TMP/nmcheck.err" &
CHECK_PID=$!
track_pid "$CHECK_PID"
sleep 3
# Eight per proxy (maxWaitersPerDevice): HAProxy's leastconn spreads them over the instances, nginx's
# round robin mostly does, so some are parked on instance 2.
PARKS=(1 2 3 4 5 6 7 8)
for n in "${PARKS[@]}"; do
  lp_start "park-n-$n" "$PARK_N" records/changes "{\"zoneID\":{\"zoneName\":\"Quiet\"},\"syncToken\":\"$QUIET_TOKEN\",\"wait\":20}" "$NGINX_URL"
  lp_start "park-h-$n" "$PARK_H" records/changes "{\"zoneID\":{\"zoneName\":\"Quiet\"},\"syncToken\":\"$QUIET_TOKEN\",\"wait\":20}" "$HAPROXY_URL"
done
# Downloads of 3 MiB at 1 MiB/s, in flight when the signal comes (drain timeout 10 s).
declare -A SLOW_PIDS=()
for n in 1 2 3; do
  for proxy in "${PROXIES[@]}"; do
    curl -sS --max-time 30 --limit-rate 1M -H "Authorization: Bearer $MAC" -o "$TEST_TMP/slow-${PROXY_NAME[$proxy]}-$n" \
      -w '%{http_code}' "$proxy$SLOW_PATH" >"$TEST_TMP/slow-${PROXY_NAME[$proxy]}-$n.status" 2>&1 &
    SLOW_PIDS[${PROXY_NAME[$proxy]}-$n]=$!
    track_pid "$!"
  done
done
sleep 1.5
parked_on_victim=$(metric nimbus_longpoll_waiters "${URLS[$VICTIM]}")
declare -A SERVED_BEFORE=()
for i in 0 2; do SERVED_BEFORE[$i]=$(curl -s "${URLS[$i]}/metrics" | awk '/^nimbus_http_requests_total/ {s += $2} END {print s + 0}'); done
# The time is taken before the signal: a waiter answered by the drain can finish within the
# millisecond that `$(now_us)` takes after it, and would look answered before it.
STOPPED_US=$(now_us)
kill -TERM "$VICTIM_PID"
note "SIGTERM to instance 2 (pid $VICTIM_PID) with $parked_on_victim waiters parked on it"
[ "${parked_on_victim:-0}" -gt 0 ] || fail_later "no waiter was parked on instance 2 when it was stopped: the check proves little"
wait_exit "$VICTIM_PID" 15
status=$?
if [ "$status" = 0 ]; then
  ok "instance 2 exited 0, $(( ($(now_us) - STOPPED_US) / 1000 )) ms after SIGTERM"
else
  fail_later "instance 2 exited with status $status after SIGTERM"
fi

before=$(failures_so_far) early=0 late=0
for n in "${PARKS[@]}"; do
  for name in "park-n-$n" "park-h-$n"; do
    lp_finish "$name" 30
    [ "$LP_STATUS" = 200 ] && [[ $LP_BODY =~ \"records\":\[\] ]] && [ "$(json_last_field syncToken "$LP_BODY")" = "$QUIET_TOKEN" ] \
      || { fail_later "parked waiter $name: answered $LP_STATUS '${LP_BODY:0:200}' ($(cat "$TEST_TMP/lp-$name/stderr"))"; continue; }
    if [ "$LP_DONE_US" -lt $((STOPPED_US + 3000000)) ]; then
      early=$((early + 1))
      [ "$LP_DONE_US" -ge "$STOPPED_US" ] \
        || fail_later "parked waiter $name answered before the SIGTERM ($(( (STOPPED_US - LP_DONE_US) / 1000 )) ms before)"
    elif [ "$LP_ELAPSED_MS" -lt 19500 ]; then
      fail_later "parked waiter $name answered after ${LP_ELAPSED_MS} ms, neither at the SIGTERM nor at its 20 s"
    else
      late=$((late + 1))
    fi
  done
done
[ "$early" -ge 1 ] || fail_later "no waiter parked through a proxy was answered at the SIGTERM"
[ "$(failures_so_far)" = "$before" ] \
  && ok "$((2 * ${#PARKS[@]})) waiters parked through the proxies: all 200, empty, same token; $early answered at the SIGTERM, $late at their 20 s"

before=$(failures_so_far)
for n in 1 2 3; do
  for name in nginx haproxy; do
    wait_exit "${SLOW_PIDS[$name-$n]}" 20 >/dev/null
    [ "$(cat "$TEST_TMP/slow-$name-$n.status")" = 200 ] && cmp -s "$TEST_TMP/slow" "$TEST_TMP/slow-$name-$n" \
      || fail_later "in-flight download $n through $name: '$(cat "$TEST_TMP/slow-$name-$n.status")', $(file_size "$TEST_TMP/slow-$name-$n") of 3145728 bytes"
  done
done
[ "$(failures_so_far)" = "$before" ] && ok "the 6 downloads in flight through the proxies at the SIGTERM finished byte-identical"

wait_exit "$CHECK_PID" 100
check_status=$?
sed 's/^/  /' "$TEST_TMP/nmcheck.out"
if [ "$check_status" = 0 ] && grep -q '^RESULT: PASS$' "$TEST_TMP/nmcheck.out"; then
  ok "checker through both proxies across the SIGTERM: $(grep '^nmcheck: lost' "$TEST_TMP/nmcheck.out" | sed 's/^nmcheck: //')"
else
  # Writers k and readers i use port (k, i + 1) mod 2: even writers and odd readers go through nginx.
  fail_later "the checker through the proxies failed (exit $check_status): $(grep -a '^nmcheck: lost' "$TEST_TMP/nmcheck.out"); $(grep -a '^reader\|^writer' "$TEST_TMP/nmcheck.err" | cut -c1-200 | head -n 12 | tr '\n' ' ')"
fi

served="" before=$(failures_so_far)
for i in 0 2; do
  after=$(curl -s "${URLS[$i]}/metrics" | awk '/^nimbus_http_requests_total/ {s += $2} END {print s + 0}')
  served+="${served:+, }instance $((i + 1)) +$((after - SERVED_BEFORE[$i]))"
  [ $((after - SERVED_BEFORE[$i])) -gt 100 ] || fail_later "instance $((i + 1)) served only $((after - SERVED_BEFORE[$i])) requests after the stop"
done
[ "$(failures_so_far)" = "$before" ] && ok "requests after the stop went to the other instances: $served"

# haproxy_stat PROXY SERVER COLUMN: one figure of HAProxy's CSV statistics.
haproxy_stat() {
  curl -s "$HAPROXY_STATS_URL" | awk -F, -v p="$1" -v s="$2" -v col="$3" \
    'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i} $1 == p && $2 == s {print $c[col]}'
}
before=$(failures_so_far)
fives=$(awk '$2 ~ /^5/' "$NGINX_DIR/access.log" | head -n 5)
[ -z "$fives" ] || fail_later "nginx answered 5xx: $fives; error.log: $(grep -a '\[error\]' "$NGINX_DIR/error.log" | grep -v 'Connection refused' | head -n 3)"
[ "$(haproxy_stat https FRONTEND hrsp_5xx)" = 0 ] || fail_later "haproxy answered $(haproxy_stat https FRONTEND hrsp_5xx) 5xx"
# A server that closes a connection carrying a request without answering: HAProxy answers 502, or on
# a reused client connection closes it silently (the client sees a dropped connection, no 5xx).
[ "$(haproxy_stat nimbus BACKEND eresp)" = 0 ] \
  || fail_later "haproxy: $(haproxy_stat nimbus BACKEND eresp) requests got no answer from a server (eresp; the clients saw 502 or a closed connection)"
note "haproxy per server (status, requests, 5xx, response errors, retries, redispatches):$(for server in n1 n2 n3; do
  printf ' %s %s %s %s %s %s %s;' "$server" "$(haproxy_stat nimbus "$server" status)" "$(haproxy_stat nimbus "$server" stot)" \
    "$(haproxy_stat nimbus "$server" hrsp_5xx)" "$(haproxy_stat nimbus "$server" eresp)" "$(haproxy_stat nimbus "$server" wretr)" "$(haproxy_stat nimbus "$server" wredis)"
done)"
[ "$(failures_so_far)" = "$before" ] && ok "no 5xx and no unanswered request at nginx or haproxy, through the whole scenario"

for i in 0 2; do NIMBUS_URL=${URLS[$i]} NIMBUS_LOG=${LOGS[$i]} expect_no_server_errors; done
logged=$(grep -a -i 'internal error\|INTERNAL_ERROR' "${LOGS[1]}" | head -n 3)
[ -z "$logged" ] || fail_later "instance 2 logged internal errors: $logged"
