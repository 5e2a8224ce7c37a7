#!/usr/bin/env bash
# Waiting records/changes and zones/changes (issue 4, docs/api.md records/changes `wait`, Details →
# Change feeds): a waiting request is answered < 1 s after a write by another device, with the
# record (creates, deletes, a zone without a token); with nothing happening it answers after the
# wait (3 s ± 0.5) with no records and EXACTLY the request's token string (a request without a
# token: the zone's current token); writes in another zone, or of a type that desiredRecordTypes
# filters out, leave it waiting; deleting the zone answers its waiter at once (the next request is
# ZONE_NOT_FOUND); wait 56 (or -1, 1.5, "5") is BAD_REQUEST and 55 is parked.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice phone

zone_op() { printf '{"operationType":"create","zone":{"zoneID":{"zoneName":"%s"}}}' "$1"; }
api_ok "$MAC" zones/modify "{\"operations\":[$(zone_op Events),$(zone_op Quiet),$(zone_op Fresh)]}"

# changes_body ZONE TOKEN WAIT [EXTRA]: a records/changes body (TOKEN - for none).
changes_body() {
  local token=""
  [ "$2" != - ] && token=",\"syncToken\":\"$2\""
  printf '{"zoneID":{"zoneName":"%s"}%s,"wait":%s%s}' "$1" "$token" "$3" "${4:+,$4}"
}
# write ZONE OP NAME TYPE: one records/modify by MAC; WRITE_SENT_US is when it was sent.
write() {
  WRITE_SENT_US=$(now_us)
  api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"$1\"},\"operations\":[{\"operationType\":\"$2\",\"record\":{\"recordName\":\"$3\",\"recordType\":\"$4\",\"fields\":{\"text\":{\"value\":\"$3 text\"}}}}]}"
  expect_item_codes ok "write $2 $3"
}
# current_token ZONE: the zone's token from a non-waiting records/changes with no token.
current_token() {
  api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"$1\"}}"
  json_last_field syncToken
}
# expect_woken NAME WHAT: the background request NAME answered 200 within 1 s of the write.
expect_woken() {
  lp_finish "$1" 20
  [ "$LP_STATUS" = 200 ] || fail "$2: status $LP_STATUS, body ${LP_BODY:0:300}"
  local from_send=$(( (LP_DONE_US - WRITE_SENT_US) / 1000 ))
  [ "$from_send" -lt 1000 ] || fail "$2: answered ${from_send} ms after the write was sent (limit 1000 ms)"
  ok "$2: answered ${from_send} ms after the write was sent"
}
# wait_parked COUNT WHAT: the waiter gauge reaches COUNT within 5 s.
wait_parked() {
  wait_metric nimbus_longpoll_waiters "$1" 5 || fail "${2:-waiters}: nimbus_longpoll_waiters is '$LP_METRIC', expected $1"
}

note "Quiet holds only a tombstone (nothing live): a request without a token finds nothing"
write Quiet create gone Note
api_ok "$MAC" records/modify '{"zoneID":{"zoneName":"Quiet"},"operations":[{"operationType":"forceDelete","record":{"recordName":"gone"}}]}'
quiet_token=$(current_token Quiet)
api_ok "$PHONE" zones/list
quiet_list_token=$(printf '%s' "$HTTP_BODY" | grep -a -o '"zoneID":{"zoneName":"Quiet"},"syncToken":"[^"]*"' | sed 's/.*"syncToken":"//; s/"$//')
[ "$quiet_token" = "$quiet_list_token" ] || fail "Quiet's token differs between records/changes ($quiet_token) and zones/list ($quiet_list_token)"
events_token0=$(current_token Events)
api_ok "$PHONE" zones/changes '{}'
db_token=$(json_last_field syncToken)

note "nothing happens: wait 3 answers after 3 s with no records and the request's token"
lp_start timeout-token "$PHONE" records/changes "$(changes_body Events "$events_token0" 3)"
lp_start timeout-notoken "$PHONE" records/changes "$(changes_body Quiet - 3)"
lp_start timeout-zones "$PHONE" zones/changes "{\"syncToken\":\"$db_token\",\"wait\":3}"
for name in timeout-token timeout-notoken timeout-zones; do
  lp_finish "$name" 10
  [ "$LP_STATUS" = 200 ] || fail "$name: status $LP_STATUS, body ${LP_BODY:0:300}"
  [ "$LP_ELAPSED_MS" -ge 2500 ] && [ "$LP_ELAPSED_MS" -le 3500 ] || fail "$name: a wait of 3 s answered after ${LP_ELAPSED_MS} ms"
  header_value Transfer-Encoding "$LP_HEADERS" | grep -qi chunked || fail "$name: the waiting answer is not chunked: $LP_HEADERS"
  # The JSON may be preceded by heartbeat spaces (none at the default 20 s).
  body=$(printf '%s' "$LP_BODY" | sed 's/^ *//')
  case $name in
    timeout-token)
      [ "$(record_summary "$body")" = "" ] && [[ $body == *'"records":[]'* ]] || fail "$name: records in an empty answer: $body"
      [ "$(json_last_field syncToken "$body")" = "$events_token0" ] || fail "$name: the empty answer's token is not the request's: $(json_last_field syncToken "$body") vs $events_token0"
      [ "$(json_last_field moreComing "$body")" = false ] || fail "$name: moreComing is not false: $body"
      ;;
    timeout-notoken)
      [[ $body == *'"records":[]'* ]] || fail "$name: records in an empty answer: $body"
      [ "$(json_last_field syncToken "$body")" = "$quiet_token" ] || fail "$name: the empty answer without a token carries $(json_last_field syncToken "$body"), not the zone's current token $quiet_token"
      ;;
    timeout-zones)
      [[ $body == *'"zones":[]'* ]] || fail "$name: zones in an empty answer: $body"
      [ "$(json_last_field syncToken "$body")" = "$db_token" ] || fail "$name: the empty zones/changes answer's token is not the request's"
      ;;
  esac
  ok "$name: answered after ${LP_ELAPSED_MS} ms, empty, token as expected"
done
wait_parked 0 "after the timeouts"

note "a write by another device wakes a waiting request at once"
lp_start wake-create "$PHONE" records/changes "$(changes_body Events "$events_token0" 20)"
wait_parked 1 "one waiter on Events"
write Events create r1 Note
expect_woken wake-create "wait 20, create r1"
[ "$(record_summary "$LP_BODY" | cut -d' ' -f1)" = r1 ] || fail "the woken answer does not carry exactly r1: ${LP_BODY:0:400}"
[ "$(field_value r1 text "$LP_BODY")" = '"r1 text"' ] || fail "the woken answer's r1 lacks its fields: ${LP_BODY:0:400}"
events_token1=$(json_last_field syncToken "$LP_BODY")
[ -n "$events_token1" ] && [ "$events_token1" != "$events_token0" ] || fail "the woken answer's token did not advance"
api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"Events\"},\"syncToken\":\"$events_token1\"}"
[ -z "$(record_summary)" ] || fail "the woken answer's token is not past r1: $HTTP_BODY"
ok "the answer carries r1 with its fields and a token past it"

note "a write in another zone leaves the waiter parked; the delete of r1 wakes it"
lp_start wake-delete "$PHONE" records/changes "$(changes_body Events "$events_token1" 20)"
wait_parked 1 "waiter on Events"
write Quiet create elsewhere Note
sleep 1
lp_running wake-delete || fail "a write in zone Quiet answered the waiter on Events: $(cat "$TEST_TMP/lp-wake-delete/body")"
ok "a write in another zone leaves the waiter parked"
WRITE_SENT_US=$(now_us)
api_ok "$MAC" records/modify '{"zoneID":{"zoneName":"Events"},"operations":[{"operationType":"forceDelete","record":{"recordName":"r1"}}]}'
expect_woken wake-delete "wait 20, delete r1"
[ "$(record_summary "$LP_BODY")" = "r1 -" ] || fail "the woken answer is not r1's tombstone: ${LP_BODY:0:400}"
events_token2=$(json_last_field syncToken "$LP_BODY")

note "desiredRecordTypes: a change of another type keeps the request waiting"
lp_start wake-typed "$PHONE" records/changes "$(changes_body Events "$events_token2" 20 '"desiredRecordTypes":["Task"]')"
wait_parked 1 "typed waiter"
write Events create n1 Note
sleep 1
if lp_running wake-typed; then
  ok "a Note does not answer a waiter for Task changes"
  write Events create t1 Task
  expect_woken wake-typed "desiredRecordTypes [Task], create t1"
  [ "$(record_summary "$LP_BODY" | cut -d' ' -f1 | tr '\n' ' ')" = "t1 " ] || fail "the typed waiter's answer is not just t1: ${LP_BODY:0:400}"
else
  lp_finish wake-typed 1
  fail "a Note answered a waiter for Task changes: ${LP_BODY:0:400}"
fi

note "no token on a zone without live records: a write wakes it with the record"
lp_start wake-fresh "$PHONE" records/changes "$(changes_body Fresh - 20)"
wait_parked 1 "waiter on Fresh without a token"
write Fresh create f1 Note
expect_woken wake-fresh "no token, zone Fresh, create f1"
[ "$(record_summary "$LP_BODY" | cut -d' ' -f1)" = f1 ] || fail "the answer without a token is not f1: ${LP_BODY:0:400}"

note "the zone is deleted while a request waits on it: the waiter is answered at once"
api_ok "$MAC" zones/modify "{\"operations\":[$(zone_op Doomed)]}"
doomed_token=$(current_token Doomed)
lp_start doomed "$PHONE" records/changes "$(changes_body Doomed "$doomed_token" 20)"
wait_parked 1 "waiter on Doomed"
WRITE_SENT_US=$(now_us)
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Doomed"}}}]}'
lp_finish doomed 20
ms=$(( (LP_DONE_US - WRITE_SENT_US) / 1000 ))
[ "$ms" -lt 1000 ] || fail "a waiter on a deleted zone answered ${ms} ms after the deletion"
body=$(printf '%s' "$LP_BODY" | sed 's/^ *//')
if [ "$LP_STATUS" = 200 ]; then
  [[ $body == *'"records":[]'* ]] && [ "$(json_last_field syncToken "$body")" = "$doomed_token" ] \
    || fail "the waiter on the deleted zone: $body"
else
  [ "$LP_STATUS" = 404 ] && [ "$(json_field serverErrorCode "$body")" = ZONE_NOT_FOUND ] || fail "the waiter on the deleted zone: $LP_STATUS $body"
fi
api "$PHONE" records/changes "$(changes_body Doomed "$doomed_token" 20)"
expect_api_error 404 ZONE_NOT_FOUND "a waiting records/changes on the deleted zone"
ok "deleting the zone answered its waiter after ${ms} ms ($LP_STATUS); the next request is ZONE_NOT_FOUND"

note "wait bounds: 0–55"
latest=$(current_token Events)
for bad in 56 -1 '"5"' 100000 1.5; do
  api "$PHONE" records/changes "$(changes_body Events "$latest" "$bad")"
  expect_api_error 400 BAD_REQUEST "records/changes wait $bad"
done
api "$PHONE" zones/changes '{"wait":56}'
expect_api_error 400 BAD_REQUEST "zones/changes wait 56"
wait_parked 0 "after the refused waits"
ok "wait 56, -1, \"5\", 100000 and 1.5 are BAD_REQUEST (records/changes), 56 too for zones/changes"
lp_start wait55 "$PHONE" records/changes "$(changes_body Events "$latest" 55)"
wait_parked 1 "wait 55"
sleep 0.5
lp_running wait55 || { lp_finish wait55 1; fail "wait 55 answered at once: $LP_STATUS ${LP_BODY:0:300}"; }
write Events create r55 Note
expect_woken wait55 "wait 55, create r55"
[ "$(record_summary "$LP_BODY" | cut -d' ' -f1)" = r55 ] || fail "the wait-55 answer is not r55: ${LP_BODY:0:400}"
ok "wait 55 is parked and answered by a write"

wait_parked 0 "at the end"
expect_no_server_errors
