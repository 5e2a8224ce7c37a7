#!/usr/bin/env bash
# Per-token rate limit (issue 7, security) at its edge: with requestsPerSecondPerToken=1 and
# requestBurstPerToken=5, burst+1 back-to-back requests of one token get exactly one 429 THROTTLED
# (the last) with `Retry-After: 1` and `"retryAfter": 1`; the bucket refills at the configured rate;
# other tokens (of the same user or another) are unaffected; requests without a token are not
# counted; a parked long-poll counts once. GET /limits shows both limits.
#
# The requests of a burst are pipelined on one connection in one write, so the server sees them
# within milliseconds. A burst whose exchange took longer than 900 ms (a refill could have
# happened) is not judged: it is repeated with a fresh token, at most 3 times.
source "$(dirname "$0")/../lib.sh"

RATE=1 BURST=5
start_store_server --requests-per-second-per-token "$RATE" --request-burst-per-token "$BURST"
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
issue_token BOB bob mac
USER_PATH=$(api_path users/current)

request GET /limits
expect_status 200 "/limits"
expect_json_field requestsPerSecondPerToken "$RATE"
expect_json_field requestBurstPerToken "$BURST"
ok "/limits shows requestsPerSecondPerToken=$RATE and requestBurstPerToken=$BURST"

# burst TOKEN N: N pipelined GET users/current with TOKEN (`-`: no Authorization) on one
# connection. Sets BURST_STATUSES ("200 200 ... 429") and BURST_MS (whole exchange).
burst() {
  local token=$1 n=$2 i bytes="" auth="" start
  [ "$token" = - ] || auth="Authorization: Bearer $token"$'\r\n'
  for ((i = 1; i <= n; i++)); do
    bytes+="GET $USER_PATH HTTP/1.1"$'\r\n'"Host: 127.0.0.1"$'\r\n'"$auth"
    [ "$i" -eq "$n" ] && bytes+="Connection: close"$'\r\n'
    bytes+=$'\r\n'
  done
  start=$(now_ms)
  raw_open
  raw_send "$bytes"
  raw_read 20
  raw_close
  BURST_MS=$(( $(now_ms) - start ))
  local methods=()
  for ((i = 1; i <= n; i++)); do methods+=(GET); done
  parse_responses "${methods[@]}"
  BURST_STATUSES="${RESP_STATUS[*]}"
}

# judged_burst WHAT N EXPECTED [SETUP [MAX_MS]]: a fresh token of alice (after running SETUP with
# it as $T, e.g. to use part of its bucket), then `burst` of N; the statuses must be EXPECTED.
# Repeated with a fresh token when it all took MAX_MS (default 900) or more. Sets T.
ATTEMPT=0
judged_burst() {
  local what=$1 n=$2 expected=$3 setup=${4:-} max=${5:-900} try start
  for try in 1 2 3; do
    ATTEMPT=$((ATTEMPT + 1))
    issue_token T alice "device$ATTEMPT"
    start=$(now_ms)
    [ -n "$setup" ] && eval "$setup"
    burst "$T" "$n"
    JUDGED_MS=$(( $(now_ms) - start ))
    if [ "$JUDGED_MS" -lt "$max" ]; then
      [ "$BURST_STATUSES" = "$expected" ] || fail "$what: statuses '$BURST_STATUSES', expected '$expected' (${JUDGED_MS} ms)"
      return 0
    fi
    note "$what took ${JUDGED_MS} ms (a refill may have happened): again with a fresh token"
  done
  fail "$what: three attempts each took $max ms or more; the machine is too slow to judge"
}

note "burst + 1 back-to-back requests"
judged_burst "burst+1" $((BURST + 1)) "200 200 200 200 200 429"
throttled=${RESP_HEADERS[$BURST]} body=${RESP_BODY[$BURST]}
[ "$(header_value Retry-After "$throttled")" = 1 ] || fail "429 without Retry-After: 1: $throttled"
[ "$(header_value Content-Type "$throttled")" = "application/json; charset=utf-8" ] || fail "429 content type: $throttled"
expect_error_body THROTTLED "$body"
expect_json_field retryAfter 1 "$body"
ok "$((BURST + 1)) requests in ${JUDGED_MS} ms: exactly one 429 THROTTLED, the last, with Retry-After: 1 and retryAfter 1"
FIRST=$T

note "other tokens are unaffected while this one is throttled"
burst "$BOB" "$BURST"
[ "$BURST_STATUSES" = "200 200 200 200 200" ] || fail "bob's token while alice's is throttled: $BURST_STATUSES"
issue_token MAC2 alice other-mac
burst "$MAC2" "$BURST"
[ "$BURST_STATUSES" = "200 200 200 200 200" ] || fail "alice's other token: $BURST_STATUSES"
ok "bob's token and alice's other token get their full bursts"

note "requests without a token are not counted"
burst - 20
[ "$BURST_STATUSES" = "$(printf '401 %.0s' $(seq 20) | sed 's/ $//')" ] || fail "20 requests without a token: $BURST_STATUSES"
for i in 1 2 3 4 5 6 7 8; do
  request GET /healthz
  expect_status 200 "healthz $i"
done
ok "20 requests without a token: all 401, none 429; /healthz is not limited"

note "the bucket refills at the configured rate"
# The burst used up at t0, then 1.05 s of rest: exactly one request is back if all of it took less
# than 2 s (a second one comes back at t0 + 2 s).
judged_burst "refill" 2 "200 429" 'burst "$T" '"$BURST"'; [ "$BURST_STATUSES" = "200 200 200 200 200" ] || fail "setup burst: $BURST_STATUSES"; sleep 1.05' 1900
ok "one request per second comes back after the burst is used up: 200 then 429"
api "$FIRST" users/current
expect_status 200 "the first token, seconds later"

note "a long-poll counts once however long it waits"
nimbus_admin user add carol >/dev/null
CAROL_BURST=0
park_one() {
  lp_start "parked$ATTEMPT" "$T" records/changes '{"zoneID":{"zoneName":"_defaultZone"},"wait":2}'
  wait_metric nimbus_longpoll_waiters 1 10 || fail "the long-poll did not park (waiters $LP_METRIC)"
}
judged_burst_carol() {
  local try start
  for try in 1 2 3; do
    ATTEMPT=$((ATTEMPT + 1))
    issue_token T carol "device$ATTEMPT"
    start=$(now_ms)
    park_one
    burst "$T" "$BURST"
    JUDGED_MS=$(( $(now_ms) - start ))
    lp_finish "parked$ATTEMPT" 15
    [ "$LP_STATUS" = 200 ] || fail "the long-poll answered $LP_STATUS"
    if [ "$JUDGED_MS" -lt 900 ]; then
      [ "$BURST_STATUSES" = "200 200 200 200 429" ] || fail "after a parked long-poll: '$BURST_STATUSES', expected 4 × 200 then 429"
      return 0
    fi
    note "long-poll case took ${JUDGED_MS} ms: again with a fresh token"
  done
  fail "long-poll case: three attempts each took 900 ms or more"
}
judged_burst_carol
ok "a parked long-poll took one request of the burst (4 more, then 429) and answered 200 after its wait"

metrics=$(curl -s --max-time 10 "$NIMBUS_URL/metrics")
grep -q 'status="429"' <<<"$metrics" || fail "/metrics counts no 429 answers"
ok "429 answers are counted in /metrics"
expect_no_server_errors
