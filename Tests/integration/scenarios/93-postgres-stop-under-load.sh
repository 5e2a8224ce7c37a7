#!/usr/bin/env bash
# PostgreSQL stopped with `pg_ctl stop -m immediate` and started again under load (issue 7, item 5).
# Two instances share one database: A runs the embedded cluster, B connects to its socket. Two
# writer loops (one per instance) keep saving into zone Load and a reader loop follows it; six
# long-poll waiters (three per instance) are parked on zone Live, where nothing is written yet.
# Then PostgreSQL dies (immediate shutdown: no checkpoint, every connection cut) for ~4 s:
#   - every request that needs the database fails fast: 503 TRY_AGAIN_LATER with Retry-After and
#     retryAfter, within 5 s; nothing else than 200 or such a 503 is ever answered;
#   - the parked waiters stay parked;
#   - after `pg_ctl start` both instances recover without a restart (same processes): writes on
#     both succeed again within 20 s, both LISTEN connections come back;
#   - one write into zone Live then answers all six waiters with that record (B's only through
#     LISTEN/NOTIFY or the wake-up after its listener reconnected);
#   - no write acknowledged before the outage is lost.
source "$(dirname "$0")/../lib.sh"

data="$TEST_TMP/data"
start_nimbus --data-dir "$data"
A_URL=$NIMBUS_URL A_PID=$NIMBUS_PID A_LOG=$NIMBUS_LOG
cluster=$(cluster_directory "$data")
socket=$(socket_directory "$data")
NIMBUS_DB_URL="postgresql:///nimbus?host=$socket&user=nimbus"
start_nimbus --database-url "$NIMBUS_DB_URL"
B_URL=$NIMBUS_URL B_PID=$NIMBUS_PID B_LOG=$NIMBUS_LOG
pg_ctl_cluster() { run_as_owner "$cluster" "$NIMBUS_TEST_PG_BIN/pg_ctl" "$@" -D "$cluster"; }

nimbus_admin user add alice >/dev/null
issue_token TOKEN alice device-1
issue_token WAITER alice device-2
issue_token PROBE alice device-3   # the probes' own token: per-token rate limits must not answer them
NIMBUS_URL=$A_URL
for zone in Load Live; do
  api_ok "$TOKEN" zones/modify "{\"operations\":[{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"$zone\"}}}]}"
done
api_ok "$TOKEN" records/modify '{"zoneID":{"zoneName":"Load"},"operations":[{"operationType":"create","record":{"recordName":"seed","recordType":"Item","fields":{"n":{"value":0}}}}]}'
for base in "$A_URL" "$B_URL"; do
  wait_metric nimbus_listener_connected 1 10 "$base" || fail "$base: LISTEN connection not up"
done

STOP="$TEST_TMP/stop"
# load NAME BASE OP BODY_PREFIX: requests until STOP; a line `STATUS MS RETRY_AFTER CODE` each
# to load-NAME, and every acknowledged record name to acked-NAME.
load() {
  local name=$1 base=$2 op=$3 n=0 out status ms retry code body
  local headers="$TEST_TMP/io-$name.headers" bodyfile="$TEST_TMP/io-$name.body"
  while [ ! -e "$STOP" ]; do
    n=$((n + 1))
    case $op in
      modify) body="{\"zoneID\":{\"zoneName\":\"Load\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"$name-$n\",\"recordType\":\"Item\",\"fields\":{\"n\":{\"value\":$n}}}}]}" ;;
      changes) body='{"zoneID":{"zoneName":"Load"},"resultsLimit":50}' ;;
    esac
    out=$(curl -s --max-time 20 -o "$bodyfile" -D "$headers" -X POST -H "Authorization: Bearer $TOKEN" \
      -H 'Content-Type: application/json' --data-binary "$body" -w '%{http_code} %{time_total}' "$base$(api_path "records/$op")")
    status=${out%% *}
    ms=$(awk -v t="${out##* }" 'BEGIN {printf "%d", t * 1000}')
    retry=$(header_value Retry-After "$(cat "$headers" 2>/dev/null)")
    code=$(json_field serverErrorCode "$(cat "$bodyfile" 2>/dev/null)") || code=-
    echo "$status $ms ${retry:--} $code" >>"$TEST_TMP/load-$name.log"
    if [ "$status" = 200 ] && [ "$op" = modify ]; then echo "$name-$n" >>"$TEST_TMP/acked-$name"; fi
    [ "$status" = 200 ] || sleep 0.1
  done
}
: >"$TEST_TMP/acked-wa" >"$TEST_TMP/acked-wb"
load wa "$A_URL" modify & track_pid $!; loaders=($!)
load wb "$B_URL" modify & track_pid $!; loaders+=($!)
load rb "$B_URL" changes & track_pid $!; loaders+=($!)

api_ok "$WAITER" records/changes '{"zoneID":{"zoneName":"Live"}}'
live_token=$(json_last_field syncToken)
for i in 1 2 3; do
  lp_start "a$i" "$WAITER" records/changes "{\"zoneID\":{\"zoneName\":\"Live\"},\"syncToken\":\"$live_token\",\"wait\":50}" "$A_URL"
  lp_start "b$i" "$WAITER" records/changes "{\"zoneID\":{\"zoneName\":\"Live\"},\"syncToken\":\"$live_token\",\"wait\":50}" "$B_URL"
done
for base in "$A_URL" "$B_URL"; do
  wait_metric nimbus_longpoll_waiters 3 10 "$base" || fail "$base: expected 3 parked waiters, gauge says '$LP_METRIC'"
done
sleep 2
before=$(cat "$TEST_TMP"/acked-* | wc -l)
[ "$before" -gt 5 ] || fail "only $before writes acknowledged before the outage"
cat "$TEST_TMP"/acked-* | sort >"$TEST_TMP/acked-before"
note "$before writes acknowledged under load; 3 waiters parked on each instance"

note "pg_ctl stop -m immediate"
pg_ctl_cluster stop -m immediate -w -t 60 >"$TEST_TMP/pg_ctl.out" 2>&1 || fail "pg_ctl stop failed: $(cat "$TEST_TMP/pg_ctl.out")"
down_at=$(now_ms)
slowest=0 probes=0
# probe BASE METHOD OP [BODY]: the answer must be a prompt 503 TRY_AGAIN_LATER with Retry-After.
probe() {
  local base=$1 started took
  NIMBUS_URL=$base
  started=$(now_ms)
  if [ "$2" = GET ]; then request GET "$3"; else api "$PROBE" "$3" "$4"; fi
  took=$(( $(now_ms) - started ))
  expect_status 503 "$3 on $base with the database down"
  expect_error_body TRY_AGAIN_LATER
  [[ $(header_value Retry-After) =~ ^[0-9]+$ ]] || fail "$3 on $base: 503 without a Retry-After in seconds"
  json_field retryAfter >/dev/null || fail "$3 on $base: 503 body without retryAfter: $HTTP_BODY"
  [ "$took" -le 5000 ] || fail "$3 on $base took $took ms to fail with the database down"
  [ "$took" -gt "$slowest" ] && slowest=$took
  probes=$((probes + 1))
}
while [ $(( $(now_ms) - down_at )) -lt 4000 ]; do
  for base in "$A_URL" "$B_URL"; do
    probe "$base" POST records/modify '{"zoneID":{"zoneName":"Load"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"probe","recordType":"Item","fields":{"n":{"value":1}}}}]}'
    probe "$base" POST records/changes '{"zoneID":{"zoneName":"Load"}}'
    probe "$base" GET /healthz
  done
done
ok "database down: $probes requests all answered 503 TRY_AGAIN_LATER with Retry-After, the slowest in $slowest ms"
for base in "$A_URL" "$B_URL"; do
  [ "$(metric nimbus_longpoll_waiters "$base")" = 3 ] || fail "$base: the parked waiters did not stay parked ($(metric nimbus_longpoll_waiters "$base"))"
done
for name in a1 a2 a3 b1 b2 b3; do lp_running "$name" || fail "waiter $name was answered while the database was down"; done
ok "the six waiters stay parked through the outage"

note "pg_ctl start"
pg_ctl_cluster start -w -t 60 -l "$socket/postgres-restart.log" \
  -o "-c listen_addresses='' -c unix_socket_directories='$socket' -c unix_socket_permissions=0700" \
  >"$TEST_TMP/pg_ctl.out" 2>&1 || fail "pg_ctl start failed: $(cat "$TEST_TMP/pg_ctl.out") $(tail -n 5 "$socket/postgres-restart.log")"
up_at=$(now_ms)
# Recovered: a write on each instance is acknowledged again (the loaders keep trying).
for name in wa wb; do
  count=$(wc -l <"$TEST_TMP/acked-$name")
  deadline=$(( $(now_ms) + 20000 ))
  while [ "$(wc -l <"$TEST_TMP/acked-$name")" -le "$count" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "writes through $name did not recover within 20 s of the database's return"
    sleep 0.1
  done
done
recovered_ms=$(( $(now_ms) - up_at ))
for base in "$A_URL" "$B_URL"; do
  wait_metric nimbus_listener_connected 1 15 "$base" || fail "$base did not re-establish its LISTEN connection"
done
process_alive "$A_PID" && process_alive "$B_PID" || fail "a nimbus process died"
ok "both instances (same pids $A_PID, $B_PID) acknowledge writes again $recovered_ms ms after the database's return; LISTEN back on both"

NIMBUS_URL=$A_URL
api_ok "$TOKEN" records/modify '{"zoneID":{"zoneName":"Live"},"operations":[{"operationType":"create","record":{"recordName":"after-outage","recordType":"Item","fields":{"n":{"value":1}}}}]}'
written=$(now_ms)
for name in a1 a2 a3 b1 b2 b3; do
  lp_finish "$name" 20
  [ "$LP_STATUS" = 200 ] || fail "waiter $name answered $LP_STATUS: ${LP_BODY:0:200}"
  [ "$(record_summary "$LP_BODY" | cut -d' ' -f1)" = after-outage ] || fail "waiter $name did not get the new record: ${LP_BODY:0:300}"
done
ok "all six parked waiters got the change written after the outage ($(( $(now_ms) - written )) ms)"

touch "$STOP"
for pid in "${loaders[@]}"; do wait_exit "$pid" 30 >/dev/null; done
cat "$TEST_TMP"/load-*.log >"$TEST_TMP/load-all"
total=$(wc -l <"$TEST_TMP/load-all")
others=$(awk '$1 != 200 && $1 != 503' "$TEST_TMP/load-all" | head -n 3)
[ -z "$others" ] || fail "the load got answers other than 200 and 503: $others"
bad503=$(awk '$1 == 503 && ($3 == "-" || $4 != "TRY_AGAIN_LATER")' "$TEST_TMP/load-all" | head -n 3)
[ -z "$bad503" ] || fail "503 answers without Retry-After or TRY_AGAIN_LATER: $bad503"
read -r n503 slow503 <<<"$(awk '$1 == 503 {n++; if ($2 > m) m = $2} END {print n + 0, m + 0}' "$TEST_TMP/load-all")"
[ "$slow503" -le 5000 ] || fail "a 503 under load took $slow503 ms"
ok "load: $total requests, $n503 answered 503 TRY_AGAIN_LATER with Retry-After (slowest $slow503 ms), the rest 200"

NIMBUS_URL=$A_URL
while mapfile -t -n 300 batch && [ ${#batch[@]} -gt 0 ]; do
  names=$(printf '{"recordName":"%s"},' "${batch[@]}")
  api_ok "$TOKEN" records/lookup "{\"zoneID\":{\"zoneName\":\"Load\"},\"records\":[${names%,}]}"
  [ -z "$(item_codes | grep -v '^ok$')" ] || fail "writes acknowledged before the outage are missing: $(item_codes | grep -v '^ok$' | sort | uniq -c | tr '\n' ' ')"
done <"$TEST_TMP/acked-before"
ok "the $before writes acknowledged before the outage are all there"
grep -a -i 'internal error\|INTERNAL_ERROR' "$A_LOG" "$B_LOG" | head -n 3 | grep . && fail "internal errors logged"
stop_nimbus "$B_PID" || fail "B did not exit 0 on SIGTERM"
stop_nimbus "$A_PID" || fail "A did not exit 0 on SIGTERM"
ok "both instances stop cleanly"
