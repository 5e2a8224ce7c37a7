#!/usr/bin/env bash
# The failover scenarios' shared part (96-99), sourced after lib.sh and proxies.sh: the deploy/ha/
# topology (etcd, two PostgreSQL 15 nodes under Patroni, HAProxy to the primary; deploy/ha/ha.sh
# templates the shipped files for ports and paths only) on free loopback ports, two `nimbus serve`
# instances pointed at HAProxy, and the load every failover runs under:
#   - the no-missed-change checker (Tests/soak/nmcheck.c -U: 503 TRY_AGAIN_LATER allowed, a write of
#     unknown outcome checked against what the server ends with) writing and reading through both;
#   - a probe writer: one records/modify every 100 ms, alternating instances, each answer logged
#     (status, ms, Retry-After, serverErrorCode): the time from an event to the first acknowledged
#     write, and that nothing but 200 or 503 TRY_AGAIN_LATER with Retry-After is ever answered;
#   - 100 long-polls parked on a quiet zone (50 per instance, 13 devices) before each event: after
#     it, one write there must reach every one of them (a 503 answer counts only if the waiter's
#     token, asked again, gets the write).
#
#   ha_up                  the topology in $TEST_TMP/ha (HA_* exports of ha.sh); torn down on exit
#   ha_leader              node1 or node2 (empty while there is none)
#   ha_postmaster NODE     the PID of NODE's postmaster
#   failover_setup         ha_up, instances A and B, users, tokens, zones, the checker compiled
#   failover_load SECONDS  the checker (SECONDS of writes) and the probe writer, in the background
#   failover_event WHAT    kill (kill -9 of the leader's postmaster) or switchover (patronictl),
#                          with 100 waiters parked first; checks the recovery (new leader, first
#                          acknowledged write within 30 s) and the waiters
#   failover_rejoin        waits (bounded) until the old leader is the synchronous standby again
#   failover_finish        waits for the checker; checks its result, the probe log, no 5xx but 503
# Figures land in $TEST_TMP/figures, the output (`figure:` lines) and, when set, the file
# NIMBUS_FAILOVER_FIGURES (appended: repeated runs for docs/scaling.md).

HA_SCRIPT=$REPO_DIR/deploy/ha/ha.sh
HA_DIR=""

for _ha_tool in patroni patronictl etcd haproxy; do
  if ! find_tool "$_ha_tool" >/dev/null; then
    if [ "${NIMBUS_IT_SKIP_MISSING_PROXY:-}" = 1 ]; then
      printf 'skip - %s is not installed (apt-get install patroni etcd-server haproxy)\n' "$_ha_tool"
      exit 0
    fi
    fail "$_ha_tool is not installed: apt-get install patroni etcd-server etcd-client haproxy (Tests/run.sh installs them)"
  fi
done
[ -x /usr/lib/postgresql/15/bin/postgres ] || fail "PostgreSQL 15 is not installed (apt-get install postgresql-15)"

# Stop the topology before lib.sh's cleanup (which keeps the scenario's exit status).
_ha_exit() {
  local status=$?
  [ -n "$HA_DIR" ] && bash "$HA_SCRIPT" down "$HA_DIR" >/dev/null 2>&1
  (exit "$status")
  cleanup
}
trap _ha_exit EXIT

ha_up() {
  HA_DIR=$TEST_TMP/ha
  local started=$(now_ms)
  HA_ETCD_PORT=$(free_port) HA_ETCD_PEER_PORT=$(free_port) HA_PG1_PORT=$(free_port) HA_PG2_PORT=$(free_port) \
  HA_REST1_PORT=$(free_port) HA_REST2_PORT=$(free_port) HA_PROXY_PORT=$(free_port) \
    bash "$HA_SCRIPT" up "$HA_DIR" >"$TEST_TMP/ha-up.out" 2>&1 || { tail -n 20 "$TEST_TMP/ha-up.out" >&2; fail "deploy/ha/ha.sh up failed"; }
  local log
  for log in log/node1/patroni.log log/node2/patroni.log log/etcd.log log/haproxy.log; do echo "$HA_DIR/$log" >>"$TEST_TMP/.logs"; done
  eval "$(cat "$HA_DIR/env")"
  note "deploy/ha up in $(( ($(now_ms) - started) / 1000 )) s: leader $(ha_leader), haproxy 127.0.0.1:$HA_PROXY_PORT"
}

ha_leader() { bash "$HA_SCRIPT" leader "$HA_DIR"; }
ha_rest_port() { if [ "$1" = node1 ]; then echo "$HA_REST1_PORT"; else echo "$HA_REST2_PORT"; fi; }
ha_postmaster() { head -n 1 "$HA_DIR/$1/data/postmaster.pid" 2>/dev/null; }
ha_patronictl() { run_as_owner "$HA_DIR/node1.yml" "$(find_tool patronictl)" -c "$HA_DIR/node1.yml" "$@"; }

# _ha_wait_new_leader OLD SECONDS: prints the new leader once it is not OLD; status 1 on timeout.
_ha_wait_new_leader() {
  local deadline=$(( $(now_ms) + $2 * 1000 )) leader
  while [ "$(now_ms)" -lt "$deadline" ]; do
    leader=$(ha_leader)
    [ -n "$leader" ] && [ "$leader" != "$1" ] && { echo "$leader"; return 0; }
    sleep 0.2
  done
  return 1
}

failover_setup() {
  cc_bin=${CC:-$(command -v cc || command -v clang || command -v gcc || true)}
  [ -n "$cc_bin" ] || fail "no C compiler (cc, clang or gcc) for Tests/soak/nmcheck.c"
  "$cc_bin" -O2 -pthread -o "$TEST_TMP/nmcheck" "$REPO_DIR/Tests/soak/nmcheck.c" 2>"$TEST_TMP/cc.log" &
  local cc_pid=$!
  ha_up
  NIMBUS_DB_URL=$HA_DATABASE_URL
  SERVE_ARGS=(--database-url "$HA_DATABASE_URL" --requests-per-second-per-token 0)
  start_nimbus "${SERVE_ARGS[@]}"
  A_URL=$NIMBUS_URL A_PORT=$NIMBUS_PORT A_LOG=$NIMBUS_LOG A_PID=$NIMBUS_PID
  start_nimbus "${SERVE_ARGS[@]}"
  B_URL=$NIMBUS_URL B_PORT=$NIMBUS_PORT B_LOG=$NIMBUS_LOG B_PID=$NIMBUS_PID
  NIMBUS_URL=$A_URL NIMBUS_LOG=$A_LOG
  nimbus_admin user add alice >/dev/null
  nimbus_admin user add checker >/dev/null
  local k pids=()
  : >"$TEST_TMP/checker-tokens" >"$TEST_TMP/waiter-tokens"
  for k in 1 2 3 4 5 6; do ( issue_token T checker "checker-$k"; echo "$T" >>"$TEST_TMP/checker-tokens" ) & pids+=($!); done
  for k in $(seq 1 13); do ( issue_token T alice "waiter-$k"; echo "$T" >>"$TEST_TMP/waiter-tokens" ) & pids+=($!); done
  for k in "${pids[@]}"; do wait "$k" || fail "token issue failed"; done
  [ "$(wc -l <"$TEST_TMP/checker-tokens")" = 6 ] && [ "$(wc -l <"$TEST_TMP/waiter-tokens")" = 13 ] || fail "token issue failed"
  issue_token WRITER alice writer
  api_ok "$WRITER" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Quiet"}}},{"operationType":"create","zone":{"zoneID":{"zoneName":"Probe"}}}]}'
  for base in "$A_URL" "$B_URL"; do
    wait_metric nimbus_listener_connected 1 15 "$base" || fail "$base: LISTEN connection not up"
  done
  wait "$cc_pid" || fail "cannot compile Tests/soak/nmcheck.c: $(cat "$TEST_TMP/cc.log")"
  EVENTS=0
  : >"$TEST_TMP/figures"
}

# _probe_writer: one write every 100 ms until $TEST_TMP/stop-probe, alternating A and B; a line
# `epoch_ms status ms retry_after code` each in $TEST_TMP/probe.log.
_probe_writer() {
  local n=0 base out status ms retry code
  while [ ! -e "$TEST_TMP/stop-probe" ]; do
    n=$((n + 1))
    if (( n % 2 )); then base=$A_URL; else base=$B_URL; fi
    out=$(curl -s --max-time 30 -o "$TEST_TMP/probe.body" -D "$TEST_TMP/probe.headers" -X POST -H "Authorization: Bearer $WRITER" \
      -H 'Content-Type: application/json' -w '%{http_code} %{time_total}' \
      --data-binary "{\"zoneID\":{\"zoneName\":\"Probe\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"p$n\",\"recordType\":\"Item\",\"fields\":{\"n\":{\"value\":$n}}}}]}" \
      "$base$(api_path records/modify)")
    status=${out%% *}
    ms=$(awk -v t="${out##* }" 'BEGIN {printf "%d", t * 1000}')
    retry=$(header_value Retry-After "$(cat "$TEST_TMP/probe.headers" 2>/dev/null)")
    code=$(json_field serverErrorCode "$(cat "$TEST_TMP/probe.body" 2>/dev/null)") || code=-
    echo "$(now_ms) $status $ms ${retry:--} $code" >>"$TEST_TMP/probe.log"
    sleep 0.1
  done
}

failover_load() {
  : >"$TEST_TMP/probe.log"
  timeout $(($1 + 150)) "$TEST_TMP/nmcheck" -U -p "$A_PORT,$B_PORT" -d "$(api_path x | sed 's#/x$##')" \
    -t "$TEST_TMP/checker-tokens" -w 12 -r 6 -s "$1" -z Checker >"$TEST_TMP/nmcheck.out" 2>"$TEST_TMP/nmcheck.err" &
  CHECK_PID=$!
  track_pid "$CHECK_PID"
  _probe_writer &
  PROBE_PID=$!
  track_pid "$PROBE_PID"
  LOAD_STARTED=$(now_ms)
}

# _park_waiters: 100 long-polls (wait 50) on zone Quiet, 50 per instance; sets QUIET_TOKEN.
_park_waiters() {
  local base_a=${A_URL} base_b=${B_URL} i token_line
  NIMBUS_URL=$A_URL api_ok "$WRITER" records/changes '{"zoneID":{"zoneName":"Quiet"}}'
  QUIET_TOKEN=$(json_last_field syncToken)
  mapfile -t tokens <"$TEST_TMP/waiter-tokens"
  : >"$TEST_TMP/park-$EVENTS.list"
  for ((i = 0; i < 100; i++)); do
    # Device i % 13 (at most 8 waiters per device and instance).
    if (( i % 2 )); then base=$base_b; else base=$base_a; fi
    printf 'POST %s %s {"zoneID":{"zoneName":"Quiet"},"syncToken":"%s","wait":50}\n' \
      "$base$(api_path records/changes)" "${tokens[$((i % 13))]}" "$QUIET_TOKEN" >>"$TEST_TMP/park-$EVENTS.list"
  done
  lp_batch "park-$EVENTS" 100
  PARK_PIDS=("${LP_BATCH_PIDS[@]}")
  for base in "$A_URL" "$B_URL"; do
    wait_metric nimbus_longpoll_waiters 50 20 "$base" || fail "event $EVENTS: $base has '$LP_METRIC' parked waiters, expected 50"
  done
}

# _first_write_after MS: epoch ms of the first acknowledged probe write that started after MS.
_first_write_after() {
  awk -v t="$1" '$1 - $3 > t && $2 == 200 {print $1; exit}' "$TEST_TMP/probe.log"
}

failover_event() {
  local what=$1 old new t0 first deadline recovered
  EVENTS=$((EVENTS + 1))
  _park_waiters
  sleep 3
  old=$(ha_leader)
  [ -n "$old" ] || fail "event $EVENTS: no leader before the $what"
  local fives_before
  fives_before=$(_count_503)
  rm -f "$TEST_TMP/stop-health"
  _health_poller &
  local health_pid=$!
  track_pid "$health_pid"
  case $what in
    kill)
      local pid
      pid=$(ha_postmaster "$old")
      [ -n "$pid" ] || fail "no postmaster pid for $old"
      t0=$(now_ms)
      kill -KILL "$pid" || fail "kill -9 $pid failed"
      note "event $EVENTS: kill -9 of $old's postmaster (pid $pid)" ;;
    switchover)
      local standby=node1
      [ "$old" = node1 ] && standby=node2
      t0=$(now_ms)
      ha_patronictl switchover --leader "$old" --candidate "$standby" --force >"$TEST_TMP/switchover-$EVENTS.out" 2>&1 \
        || fail "patronictl switchover failed: $(tail -n 5 "$TEST_TMP/switchover-$EVENTS.out")"
      note "event $EVENTS: patronictl switchover from $old to $standby" ;;
    *) fail "failover_event: unknown event $what" ;;
  esac
  new=$(_ha_wait_new_leader "$old" 60) || fail "event $EVENTS: no new leader within 60 s of the $what ($(bash "$HA_SCRIPT" status "$HA_DIR" 2>&1 | tr '\n' ' '))"
  deadline=$(( t0 + 30000 ))
  until first=$(_first_write_after "$t0") && [ -n "$first" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "event $EVENTS: no write acknowledged within 30 s of the $what (leader now $new)"
    sleep 0.1
  done
  recovered=$(( first - t0 ))
  # Both instances write again: their own probe writes alternate, so wait for one through each.
  sleep 1
  local fives=$(( $(_count_503) - fives_before )) gap
  # The longest time without an acknowledged probe write around the event (answers' end times).
  gap=$(awk -v t="$t0" '$2 == 200 && $1 >= t - 1000 {if (last && $1 - last > m) m = $1 - last; last = $1} END {print m + 0}' "$TEST_TMP/probe.log")
  ok "event $EVENTS ($what): $new leads; first write started after the $what acknowledged $recovered ms after it; longest gap between acknowledged writes $gap ms; $fives answers were 503 meanwhile"
  echo "$what recovered_ms=$recovered gap_ms=$gap n503=$fives" >>"$TEST_TMP/figures"
  echo "figure: $what recovered_ms=$recovered gap_ms=$gap n503=$fives"
  # For bench/failover.sh and docs/scaling.md: one line per event, across repeated runs.
  [ -z "${NIMBUS_FAILOVER_FIGURES:-}" ] || echo "$SCENARIO_NAME $what recovered_ms=$recovered gap_ms=$gap n503=$fives" >>"$NIMBUS_FAILOVER_FIGURES"
  for base in "$A_URL" "$B_URL"; do
    wait_metric nimbus_listener_connected 1 20 "$base" || fail "event $EVENTS: $base did not re-establish its LISTEN connection"
  done
  touch "$TEST_TMP/stop-health"
  wait_exit "$health_pid" 20 >/dev/null
  _check_health "$new"
  # One write into Quiet must reach all 100 parked waiters.
  NIMBUS_URL=$A_URL api_ok "$WRITER" records/modify "{\"zoneID\":{\"zoneName\":\"Quiet\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"after-$EVENTS\",\"recordType\":\"Item\",\"fields\":{\"n\":{\"value\":$EVENTS}}}}]}"
  LP_BATCH_PIDS=("${PARK_PIDS[@]}")
  lp_batch_wait "park-$EVENTS" 30 || fail "event $EVENTS: parked waiters still unanswered 30 s after the write into their zone"
  local i status got=0 retried=0 line
  while read -r i status; do
    if [ "$status" = 200 ] && grep -q "\"after-$EVENTS\"" "$TEST_TMP/park-$EVENTS/$i.out"; then
      got=$((got + 1))
    elif [ "$status" = 503 ] && grep -q TRY_AGAIN_LATER "$TEST_TMP/park-$EVENTS/$i.out"; then
      # Answered during the gap: the device asks again with its token and must get the write.
      NIMBUS_URL=$B_URL api_ok "$WRITER" records/changes "{\"zoneID\":{\"zoneName\":\"Quiet\"},\"syncToken\":\"$QUIET_TOKEN\"}"
      grep -q "\"after-$EVENTS\"" <<<"$HTTP_BODY" || fail "event $EVENTS: waiter $i answered 503, and its token does not lead to the write"
      retried=$((retried + 1))
    else
      fail "event $EVENTS: parked waiter $i answered $status without the write: $(head -c 300 "$TEST_TMP/park-$EVENTS/$i.out")"
    fi
  done <"$TEST_TMP/park-$EVENTS.status"
  [ $((got + retried)) = 100 ] || fail "event $EVENTS: $((got + retried)) of 100 parked waiters accounted for"
  ok "event $EVENTS: all 100 parked waiters answered: $got with the write made after the $what, $retried with 503 TRY_AGAIN_LATER (their token then led to it)"
}

failover_rejoin() {
  local node=$1 port deadline started=$(now_ms)
  port=$(ha_rest_port "$node")
  deadline=$(( started + 90000 ))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/sync")" = 200 ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "$node did not come back as the synchronous standby within 90 s: $(bash "$HA_SCRIPT" status "$HA_DIR" 2>&1 | tr '\n' ' ')"
    sleep 0.5
  done
  ok "$node is back as the synchronous standby (pg_rewind or re-clone by Patroni), $(( ($(now_ms) - started) / 1000 )) s after we started waiting"
}

# _health_poller: GET /healthz on A every 250 ms until $TEST_TMP/stop-health; a line
# `epoch_ms status ms status-field host role` each in $TEST_TMP/health.log.
_health_poller() {
  local out status ms body
  : >"$TEST_TMP/health.log"
  while [ ! -e "$TEST_TMP/stop-health" ]; do
    out=$(curl -s --max-time 20 -o "$TEST_TMP/health.body" -w '%{http_code} %{time_total}' "$A_URL/healthz")
    status=${out%% *}
    ms=$(awk -v t="${out##* }" 'BEGIN {printf "%d", t * 1000}')
    body=$(cat "$TEST_TMP/health.body" 2>/dev/null)
    echo "$(now_ms) $status $ms $(json_field status "$body" || echo -) $(json_field host "$body" || echo -) $(json_field role "$body" || echo -)" >>"$TEST_TMP/health.log"
    sleep 0.25
  done
}

# _check_health NEW_LEADER: /healthz answered within 2.6 s throughout (its bound is 2 s), `ok` from a
# primary or `degraded` (503); the last answer, and `nimbus stats`, name the new leader as primary.
_check_health() {
  local port=$HA_PG1_PORT slow bad degraded last stats
  [ "$1" = node2 ] && port=$HA_PG2_PORT
  read -r slow degraded <<<"$(awk '{if ($3 > m) m = $3; if ($4 == "degraded") d++} END {print m + 0, d + 0}' "$TEST_TMP/health.log")"
  bad=$(awk '!(($2 == 200 && $4 == "ok" && $6 == "primary") || ($2 == 503 && $4 == "degraded"))' "$TEST_TMP/health.log" | head -n 3)
  [ -z "$bad" ] || fail_later "event $EVENTS: /healthz answers neither ok from a primary nor degraded: $bad"
  [ "$slow" -le 2600 ] || fail_later "event $EVENTS: /healthz took $slow ms (bounded at 2 s)"
  # Then (bounded: a pool busy reconnecting under the checker's load can make one probe miss its
  # 2 s) it names the new leader as the primary.
  local deadline=$(( $(now_ms) + 15000 )) body
  while :; do
    body=$(curl -s --max-time 10 "$A_URL/healthz")
    last="$(json_field status "$body") $(json_field host "$body") $(json_field role "$body")"
    [ "$last" = "ok 127.0.0.1:$port primary" ] && break
    [ "$(now_ms)" -lt "$deadline" ] || { fail_later "event $EVENTS: /healthz after the failover does not name $1 (127.0.0.1:$port) as primary within 15 s: $body"; break; }
    sleep 0.25
  done
  stats=$(nimbus_admin stats | head -n 1)
  [[ $stats == "database 127.0.0.1:$port primary "* ]] || fail_later "event $EVENTS: nimbus stats does not name $1 (127.0.0.1:$port) as primary: $stats"
  ok "event $EVENTS: /healthz answered $(wc -l <"$TEST_TMP/health.log") times, $degraded of them degraded (503), the slowest in $slow ms; then it, and nimbus stats, name $1 (127.0.0.1:$port) as primary"
}

# _count_503: 503 answers so far on both instances (their /metrics).
_count_503() {
  local sum=0 base value
  for base in "$A_URL" "$B_URL"; do
    value=$(curl -s --max-time 5 "$base/metrics" | awk '/^nimbus_http_requests_total\{.*status="503"/ {s += $2} END {print s + 0}')
    sum=$((sum + ${value:-0}))
  done
  echo "$sum"
}

failover_finish() {
  wait_exit "$CHECK_PID" 170
  local check_status=$?
  touch "$TEST_TMP/stop-probe"
  wait_exit "$PROBE_PID" 40 >/dev/null
  sed 's/^/  /' "$TEST_TMP/nmcheck.out"
  if [ "$check_status" = 0 ] && grep -q '^RESULT: PASS$' "$TEST_TMP/nmcheck.out"; then
    ok "checker across the failover: $(grep '^nmcheck: lost' "$TEST_TMP/nmcheck.out" | sed 's/^nmcheck: //'); $(grep '^nmcheck: unavailable' "$TEST_TMP/nmcheck.out" | sed 's/^nmcheck: //')"
  else
    fail_later "the checker failed (exit $check_status): $(grep -a '^nmcheck: lost' "$TEST_TMP/nmcheck.out"); $(head -n 12 "$TEST_TMP/nmcheck.err" | cut -c1-200 | tr '\n' ' ')"
  fi
  local others bad slow total n503
  others=$(awk '$2 != 200 && $2 != 503' "$TEST_TMP/probe.log" | head -n 3)
  [ -z "$others" ] || fail_later "the probe writer got answers other than 200 and 503: $others"
  bad=$(awk '$2 == 503 && ($4 == "-" || $5 != "TRY_AGAIN_LATER")' "$TEST_TMP/probe.log" | head -n 3)
  [ -z "$bad" ] || fail_later "503 answers without Retry-After or TRY_AGAIN_LATER: $bad"
  read -r total n503 slow <<<"$(awk '{n++; if ($2 == 503) f++; if ($3 > m) m = $3} END {print n + 0, f + 0, m + 0}' "$TEST_TMP/probe.log")"
  [ "$slow" -le 15000 ] || fail_later "a probe write took $slow ms to be answered (request timeout bound 15 s)"
  ok "probe writer: $total writes, $n503 answered 503 TRY_AGAIN_LATER with Retry-After, the rest 200; slowest answer $slow ms"
  local base metrics fives
  for base in "$A_URL" "$B_URL"; do
    metrics=$(curl -s --max-time 10 "$base/metrics")
    fives=$(grep '^nimbus_http_requests_total{.*status="5' <<<"$metrics" | grep -v 'status="503"' | head -n 3)
    [ -z "$fives" ] || fail_later "$base answered 5xx other than 503: $fives"
  done
  local logged
  logged=$(grep -a -i 'internal error\|INTERNAL_ERROR' "$A_LOG" "$B_LOG" | head -n 3)
  [ -z "$logged" ] || fail_later "internal errors logged: $logged"
  process_alive "$A_PID" && process_alive "$B_PID" || fail_later "a nimbus instance died"
  ok "no 5xx but 503 on either instance, no internal error logged, both instances (pids $A_PID, $B_PID) still the same processes"
}
