#!/usr/bin/env bash
# Many waiters, limits and shutdown (issue 4 item 5 and "Tests that must exist"):
# - 1,000 concurrent waiters, each on its own zone (10 users × 100 zones): one write wakes exactly
#   one waiter; then one write per zone answers all the others, each with its own record;
# - 1,000 waiters on one shared zone (4 devices of one user) are all answered after one write;
# - the waiter gauge (/metrics nimbus_longpoll_waiters) returns to 0 after each; 1,000 clients
#   that go away leave no waiter behind (gauge 0 within 1 s);
# - per-device and total caps (second instance, defaults: 8 per device; --max-waiters 12): the
#   9th wait of a device and the 13th in all are 429 THROTTLED with Retry-After and retryAfter;
# - SIGTERM with 250 waiting changes requests, a notification poll and a zones/changes wait
#   parked answers every one of them at once (empty, with the request's token or cursor) and the
#   server exits 0.
# Waiters are curl --parallel transfers (250 per curl process); loopback only.
source "$(dirname "$0")/../lib.sh"
SCENARIO_START=$(now_ms)

ulimit -n "$(ulimit -Hn)" 2>/dev/null
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 4096 ] || fail "ulimit -n is $(ulimit -n); 1,000 waiters need more descriptors"

USERS=10 ZONES=100 SHARED_DEVICES=4 TERM_WAITERS=250
# Hundreds of waiters per token in one burst: a load test of parking, not of the per-token limit.
start_store_server --max-waiters-per-device 1000 --requests-per-second-per-token 0
A_URL=$NIMBUS_URL A_PID=$NIMBUS_PID A_LOG=$NIMBUS_LOG
start_nimbus --database-url "$NIMBUS_DB_URL" --max-waiters 12
B_URL=$NIMBUS_URL B_PID=$NIMBUS_PID B_LOG=$NIMBUS_LOG
NIMBUS_URL=$A_URL NIMBUS_LOG=$A_LOG

declare -a TOKENS
for u in $(seq 1 "$USERS"); do
  nimbus_admin user add "user$u" >/dev/null
  issue_token T "user$u" "device$u"
  TOKENS[u]=$T
done
declare -a SHARED
for d in $(seq 1 "$SHARED_DEVICES"); do
  issue_token T user1 "shared$d"
  SHARED[d]=$T
done
issue_token WRITER user1 writer
CHANGES_URL="$A_URL$(api_path records/changes)"
MODIFY_URL="$A_URL$(api_path records/modify)"

# parked COUNT SECONDS [BASE_URL]: the waiter gauge reaches COUNT.
parked() {
  wait_metric nimbus_longpoll_waiters "$1" "$2" "${3:-$A_URL}" \
    || fail "nimbus_longpoll_waiters of ${3:-$A_URL} is '$LP_METRIC' after $2 s, expected $1"
}
# statuses NAME: `COUNT STATUS` pairs of a finished batch, e.g. "1000x200".
statuses() { cut -d' ' -f2 "$TEST_TMP/$1.status" | sort | uniq -c | awk '{printf "%s%sx%s", (NR > 1 ? " " : ""), $1, $2}'; }

note "setup: $USERS users with $ZONES zones each"
for u in $(seq 1 "$USERS"); do
  ops=""
  for z in $(seq -w 1 "$ZONES"); do ops+="${ops:+,}{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"Z$z\"}}}"; done
  api_ok "${TOKENS[u]}" zones/modify "{\"operations\":[$ops]}"
done

note "1,000 waiters, each on its own zone"
: >"$TEST_TMP/own.list"; : >"$TEST_TMP/own.expected"; : >"$TEST_TMP/ownw.list"
line=0
for u in $(seq 1 "$USERS"); do
  api_ok "${TOKENS[u]}" zones/list
  while read -r zone token; do
    [ "$zone" = _defaultZone ] && continue
    line=$((line + 1))
    printf 'POST %s %s {"zoneID":{"zoneName":"%s"},"syncToken":"%s","wait":50}\n' "$CHANGES_URL" "${TOKENS[u]}" "$zone" "$token" >>"$TEST_TMP/own.list"
    printf '%s w-%s-%s\n' "$line" "$u" "$zone" >>"$TEST_TMP/own.expected"
    # The write that wakes it (the first waiter's write is made on its own below).
    [ "$line" -gt 1 ] && printf 'POST %s %s {"zoneID":{"zoneName":"%s"},"operations":[{"operationType":"create","record":{"recordName":"w-%s-%s","recordType":"Note","fields":{"n":{"value":1}}}}]}\n' \
      "$MODIFY_URL" "${TOKENS[u]}" "$zone" "$u" "$zone" >>"$TEST_TMP/ownw.list"
  done < <(printf '%s' "$HTTP_BODY" | grep -a -o '"zoneID":{"zoneName":"[^"]*"},"syncToken":"[^"]*"' | sed 's/^"zoneID":{"zoneName":"\([^"]*\)"},"syncToken":"\([^"]*\)"$/\1 \2/')
done
[ "$line" -eq $((USERS * ZONES)) ] || fail "zones/list gave $line zone tokens, expected $((USERS * ZONES))"
start=$(now_ms)
lp_batch own 1000
OWN_PIDS=("${LP_BATCH_PIDS[@]}")
parked 1000 30
ok "1000 waiters parked in $(( $(now_ms) - start )) ms"

# The first waiter: user1's first zone.
read -r _ first_url first_token first_body <"$TEST_TMP/own.list"
first_zone=$(printf '%s' "$first_body" | sed 's/.*"zoneName":"\([^"]*\)".*/\1/')
sent=$(now_ms)
api_ok "${TOKENS[1]}" records/modify "{\"zoneID\":{\"zoneName\":\"$first_zone\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"w-1-$first_zone\",\"recordType\":\"Note\",\"fields\":{\"n\":{\"value\":1}}}}]}"
parked 999 2
woke_ms=$(( $(now_ms) - sent ))
sleep 0.3
[ "$(metric nimbus_longpoll_waiters)" = 999 ] || fail "one write woke more than one waiter: gauge $(metric nimbus_longpoll_waiters)"
[ -s "$TEST_TMP/own/1.out" ] && grep -q "\"recordName\":\"w-1-$first_zone\"" "$TEST_TMP/own/1.out" \
  || fail "waiter 1 was not answered with w-1-$first_zone: $(head -c 300 "$TEST_TMP/own/1.out" 2>/dev/null)"
answered=$(ls "$TEST_TMP/own" | wc -l)
[ "$answered" -le 1 ] || fail "$answered waiters have answers after one write to one zone"
ok "one write to zone $first_zone woke exactly its waiter (gauge 999 after ${woke_ms} ms)"

start=$(now_ms)
lp_batch ownw 32
lp_batch_wait ownw 60 || fail "999 writes did not finish within 60 s"
writes_ms=$(( $(now_ms) - start ))
[ "$(statuses ownw)" = 999x200 ] || fail "the 999 writes answered: $(statuses ownw)"
LP_BATCH_PIDS=("${OWN_PIDS[@]}")
lp_batch_wait own 20 || fail "waiters still unanswered 20 s after the writes; gauge $(metric nimbus_longpoll_waiters)"
all_ms=$(( $(now_ms) - start ))
[ "$(statuses own)" = 1000x200 ] || fail "the 1000 waiters answered: $(statuses own)"
got=$(grep -a -o -H '"recordName":"[^"]*"' "$TEST_TMP"/own/*.out | sed 's#^.*/\([0-9]*\)\.out:"recordName":"\([^"]*\)"$#\1 \2#' | sort -n)
[ "$got" = "$(sort -n "$TEST_TMP/own.expected")" ] \
  || fail "waiters' answers differ from one record each of their own zone: $(diff <(printf '%s\n' "$got") <(sort -n "$TEST_TMP/own.expected") | head -n 6 | tr '\n' ' ')"
parked 0 2
ok "999 writes (32 at a time, ${writes_ms} ms) answered the other 999 waiters, each with just its own record (all answered ${all_ms} ms after the writes began); gauge 0"

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

note "caps on instance B (8 per device, 12 in all)"
changes_b() { printf '{"zoneID":{"zoneName":"Z001"},"syncToken":"%s","wait":20}' "$1"; }
token_of() { NIMBUS_URL=$B_URL api_ok "$1" records/changes '{"zoneID":{"zoneName":"Z001"}}'; json_last_field syncToken; }
t2=$(token_of "${TOKENS[2]}") t3=$(token_of "${TOKENS[3]}") t4=$(token_of "${TOKENS[4]}")
for i in 1 2 3 4 5 6 7 8; do lp_start "cap2-$i" "${TOKENS[2]}" records/changes "$(changes_b "$t2")" "$B_URL"; done
parked 8 10 "$B_URL"
NIMBUS_URL=$B_URL api "${TOKENS[2]}" records/changes "$(changes_b "$t2")"
expect_api_error 429 THROTTLED "the 9th wait of one device"
retry=$(json_field retryAfter)
[[ $retry =~ ^[0-9]+$ ]] && [ "$retry" -ge 1 ] || fail "THROTTLED without a retryAfter in seconds: $HTTP_BODY"
[ "$(header_value Retry-After)" = "$retry" ] || fail "Retry-After header '$(header_value Retry-After)' differs from retryAfter $retry"
ok "the 9th concurrent wait of a device: 429 THROTTLED, Retry-After: $retry"
NIMBUS_URL=$B_URL api "${TOKENS[2]}" records/changes "{\"zoneID\":{\"zoneName\":\"Z001\"},\"syncToken\":\"$t2\",\"wait\":0}"
expect_status 200 "a non-waiting request of a device at its wait cap"
for i in 1 2 3 4; do lp_start "cap3-$i" "${TOKENS[3]}" records/changes "$(changes_b "$t3")" "$B_URL"; done
parked 12 10 "$B_URL"
NIMBUS_URL=$B_URL api "${TOKENS[4]}" records/changes "$(changes_b "$t4")"
expect_api_error 429 THROTTLED "the 13th wait on an instance with --max-waiters 12"
[ -n "$(header_value Retry-After)" ] || fail "the total-cap THROTTLED has no Retry-After header"
ok "the 13th wait on the instance: 429 THROTTLED (another device, total cap)"
[ "$(metric nimbus_longpoll_waiters "$A_URL")" = 0 ] || fail "B's waiters show on A"
api_ok "${TOKENS[2]}" records/modify '{"zoneID":{"zoneName":"Z001"},"operations":[{"operationType":"create","record":{"recordName":"cap-2","recordType":"Note","fields":{"n":{"value":1}}}}]}'
api_ok "${TOKENS[3]}" records/modify '{"zoneID":{"zoneName":"Z001"},"operations":[{"operationType":"create","record":{"recordName":"cap-3","recordType":"Note","fields":{"n":{"value":1}}}}]}'
for i in 1 2 3 4 5 6 7 8; do lp_finish "cap2-$i" 10; [ "$LP_STATUS" = 200 ] && [[ $LP_BODY == *cap-2* ]] || fail "cap2-$i: $LP_STATUS ${LP_BODY:0:200}"; done
for i in 1 2 3 4; do lp_finish "cap3-$i" 10; [ "$LP_STATUS" = 200 ] && [[ $LP_BODY == *cap-3* ]] || fail "cap3-$i: $LP_STATUS ${LP_BODY:0:200}"; done
parked 0 2 "$B_URL"
lp_start cap2-again "${TOKENS[2]}" records/changes "$(changes_b "$(token_of "${TOKENS[2]}")")" "$B_URL"
parked 1 5 "$B_URL"
lp_kill cap2-again
parked 0 1 "$B_URL"
ok "answered waiters free their places: the device may wait again"

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

NIMBUS_URL=$B_URL NIMBUS_LOG=$B_LOG expect_no_server_errors
logged=$(grep -a -i 'internal error\|INTERNAL_ERROR\|Fatal error' "$A_LOG" | head -n 3)
[ -z "$logged" ] || fail "instance A logged: $logged"
note "took $(( ($(now_ms) - SCENARIO_START) / 1000 )) s"
