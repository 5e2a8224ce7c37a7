#!/usr/bin/env bash
# Many waiters on real sockets, and shutdown (issue 4 item 5 and "Tests that must exist"):
# - 1,000 waiters on one shared zone (4 devices of one user) are all answered after one write;
# - the waiter gauge (/metrics nimbus_longpoll_waiters) returns to 0 after it; 1,000 clients
#   that go away (killed) leave no waiter behind (gauge 0 within 1 s);
# - SIGTERM with 250 waiting changes requests, a notification poll and a zones/changes wait
#   parked answers every one of them at once (empty, with the request's token or cursor) and the
#   server exits 0.
# Waiters are curl --parallel transfers (250 per curl process); loopback only. The rules in
# process (one write answers exactly the waiters of its zone, each with its own record; the caps
# per device and in all with Retry-After; shutdown's empty answers): Tests/NimbusAPITests/
# WaiterLifecycleTests.swift.
source "$(dirname "$0")/../lib.sh"
SCENARIO_START=$(now_ms)

ulimit -n "$(ulimit -Hn)" 2>/dev/null
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 4096 ] || fail "ulimit -n is $(ulimit -n); 1,000 waiters need more descriptors"

SHARED_DEVICES=4 TERM_WAITERS=250
# Hundreds of waiters per token in one burst: a load test of parking, not of the per-token limit.
start_store_server --max-waiters-per-device 1000 --requests-per-second-per-token 0
A_URL=$NIMBUS_URL A_PID=$NIMBUS_PID A_LOG=$NIMBUS_LOG

nimbus_admin user add user1 >/dev/null
declare -a SHARED
for d in $(seq 1 "$SHARED_DEVICES"); do
  issue_token T user1 "shared$d"
  SHARED[d]=$T
done
issue_token WRITER user1 writer
CHANGES_URL="$A_URL$(api_path records/changes)"

# parked COUNT SECONDS [BASE_URL]: the waiter gauge reaches COUNT.
parked() {
  wait_metric nimbus_longpoll_waiters "$1" "$2" "${3:-$A_URL}" \
    || fail "nimbus_longpoll_waiters of ${3:-$A_URL} is '$LP_METRIC' after $2 s, expected $1"
}
# statuses NAME: `COUNT STATUS` pairs of a finished batch, e.g. "1000x200".
statuses() { cut -d' ' -f2 "$TEST_TMP/$1.status" | sort | uniq -c | awk '{printf "%s%sx%s", (NR > 1 ? " " : ""), $1, $2}'; }

note "1,000 waiters on one shared zone, one write"
api_ok "$WRITER" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Shared"}}}]}'
api_ok "$WRITER" records/changes '{"zoneID":{"zoneName":"Shared"}}'
shared_token=$(json_last_field syncToken)
# shared_list NAME TOKEN [COUNT]: COUNT (1000) waits on Shared over the shared devices.
shared_list() {
  local i
  for i in $(seq 1 "${3:-1000}"); do
    printf 'POST %s %s {"zoneID":{"zoneName":"Shared"},"syncToken":"%s","wait":50}\n' "$CHANGES_URL" "${SHARED[$(( (i - 1) % SHARED_DEVICES + 1 ))]}" "$2"
  done >"$TEST_TMP/$1.list"
}
shared_list shared "$shared_token"
lp_batch shared 1000
parked 1000 30
sent=$(now_ms)
api_ok "$WRITER" records/modify '{"zoneID":{"zoneName":"Shared"},"operations":[{"operationType":"create","record":{"recordName":"for-everyone","recordType":"Note","fields":{"n":{"value":1}}}}]}'
lp_batch_wait shared 20 || fail "waiters on Shared still unanswered 20 s after the write; gauge $(metric nimbus_longpoll_waiters)"
shared_ms=$(( $(now_ms) - sent ))
[ "$(statuses shared)" = 1000x200 ] || fail "the 1000 shared waiters answered: $(statuses shared)"
with_record=$(grep -l '"recordName":"for-everyone"' "$TEST_TMP"/shared/*.out | wc -l)
[ "$with_record" -eq 1000 ] || fail "$with_record of 1000 answers carry for-everyone"
parked 0 2
ok "one write answered all 1000 waiters of Shared within ${shared_ms} ms, each with the record; gauge 0"
api_ok "$WRITER" records/changes '{"zoneID":{"zoneName":"Shared"}}'
shared_token=$(json_last_field syncToken)

note "1,000 clients go away while waiting"
shared_list gone "$shared_token"
lp_batch gone 1000
parked 1000 30
lp_batch_kill
parked 0 1
ok "killing 1000 waiting clients brought the gauge to 0 within ${LP_METRIC_MS} ms"
[ "$(metric nimbus_http_open_connections)" -le 2 ] || note "open connections after the kill: $(metric nimbus_http_open_connections)"

note "SIGTERM with $TERM_WAITERS waiters, a notification poll and a zones/changes wait parked"
shared_list term "$shared_token" "$TERM_WAITERS"
lp_batch term "$TERM_WAITERS"
TERM_PIDS=("${LP_BATCH_PIDS[@]}")
api_ok "$WRITER" tokens/create '{}'
channel_url=$(json_field webcourierURL) cursor=$(json_field cursor)
lp_get term-poll "$WRITER" "$channel_url?since=$cursor&wait=50"
api_ok "$WRITER" zones/changes '{}'
db_token=$(json_last_field syncToken)
lp_start term-zones "$WRITER" zones/changes "{\"syncToken\":\"$db_token\",\"wait\":50}"
parked $((TERM_WAITERS + 2)) 30
sigterm_at=$(now_ms)
kill -TERM "$A_PID"
lp_batch_wait term 10 || fail "waiters still unanswered 10 s after SIGTERM"
answered_ms=$(( $(now_ms) - sigterm_at ))
lp_finish term-poll 5
poll_status=$LP_STATUS poll_body=$LP_BODY
lp_finish term-zones 5
zones_status=$LP_STATUS zones_body=$LP_BODY
wait_exit "$A_PID" 30
exit_status=$?
exit_ms=$(( $(now_ms) - sigterm_at ))
[ "$(statuses term)" = "${TERM_WAITERS}x200" ] || fail "after SIGTERM the $TERM_WAITERS waiters got: $(statuses term)"
empty_same=$(grep -l "\"records\":\[\],\"syncToken\":\"$shared_token\"" "$TEST_TMP"/term/*.out | wc -l)
[ "$empty_same" -eq "$TERM_WAITERS" ] || fail "$empty_same of $TERM_WAITERS SIGTERM answers are empty with the request's token; e.g. $(head -c 300 "$TEST_TMP/term/1.out")"
[ "$answered_ms" -le 2000 ] || fail "answering $TERM_WAITERS waiters on SIGTERM took ${answered_ms} ms"
ok "SIGTERM answered all $TERM_WAITERS waiters within ${answered_ms} ms, each empty with the request's token"
[ "$poll_status" = 200 ] && [[ $poll_body == *'"notifications":[]'* ]] && [ "$(json_field cursor "$poll_body")" = "$cursor" ] \
  || fail "the parked notification poll after SIGTERM: $poll_status ${poll_body:0:300}"
[ "$zones_status" = 200 ] && [[ $zones_body == *'"zones":[]'* ]] && [ "$(json_last_field syncToken "$zones_body")" = "$db_token" ] \
  || fail "the parked zones/changes after SIGTERM: $zones_status ${zones_body:0:300}"
ok "the parked notification poll and zones/changes wait got empty answers with their cursor/token"
[ "$exit_status" -eq 0 ] || fail "nimbus exited with $exit_status after SIGTERM (expected 0)"
ok "the server exited 0, ${exit_ms} ms after SIGTERM"

logged=$(grep -a -i 'internal error\|INTERNAL_ERROR\|Fatal error' "$A_LOG" | head -n 3)
[ -z "$logged" ] || fail "instance A logged: $logged"
note "took $(( ($(now_ms) - SCENARIO_START) / 1000 )) s"
