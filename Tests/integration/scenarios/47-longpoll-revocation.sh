#!/usr/bin/env bash
# A device revoked while its long-polls are parked (docs/api.md "Devices", docs/scaling.md
# "How wake-ups travel"): two `nimbus serve` share one database. The phone waits on instance A with
# records/changes, zones/changes and a webcourier poll (wait 30); the mac revokes it through
# instance B (POST /devices/revoke) and at once writes a record that fires a subscription. Every
# waiter is answered within 2 s of the revocation, empty (its headers, status 200, went out when it
# parked), with nothing written after the revocation, and the phone's next request is 401
# AUTHENTICATION_FAILED. Then the tablet waits on both instances and `nimbus token revoke` (the
# CLI, no server of its own) revokes it with nothing written: its notice alone answers them all
# within 2 s, and the next request is 401.
source "$(dirname "$0")/../lib.sh"

start_store_server
A_URL=$NIMBUS_URL A_PID=$NIMBUS_PID A_LOG=$NIMBUS_LOG
start_nimbus --database-url "$NIMBUS_DB_URL"
B_URL=$NIMBUS_URL B_PID=$NIMBUS_PID B_LOG=$NIMBUS_LOG
NIMBUS_URL=$A_URL NIMBUS_LOG=$A_LOG
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice phone
issue_token TABLET alice tablet
for base in "$A_URL" "$B_URL"; do
  wait_metric nimbus_listener_connected 1 5 "$base" || fail "$base: nimbus_listener_connected is '$LP_METRIC'"
done

api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Shared"}}}]}'
api_ok "$MAC" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"sub-events","subscriptionType":"query","query":{"recordType":"Event"},"firesOn":["create"],"notificationInfo":{"title":"Event"}}}]}'

# park_all PREFIX TOKEN BASE...: the device's three long-polls (wait 30, nothing newer to answer),
# records/changes on the first BASE, zones/changes and the webcourier poll on the last.
park_all() {
  local prefix=$1 token=$2 first=$3 last=${!#}
  NIMBUS_URL=$first api_ok "$token" records/changes '{"zoneID":{"zoneName":"Shared"}}'
  local records_token; records_token=$(json_last_field syncToken)
  NIMBUS_URL=$last api_ok "$token" zones/changes '{}'
  local zones_token; zones_token=$(json_last_field syncToken)
  NIMBUS_URL=$last api_ok "$token" tokens/create '{}'
  local channel; channel=$(json_field webcourierURL)
  local cursor; cursor=$(json_field cursor)
  lp_start "$prefix-records" "$token" records/changes "{\"zoneID\":{\"zoneName\":\"Shared\"},\"syncToken\":\"$records_token\",\"wait\":30}" "$first"
  lp_start "$prefix-zones" "$token" zones/changes "{\"syncToken\":\"$zones_token\",\"wait\":30}" "$last"
  lp_get "$prefix-poll" "$token" "$channel?since=$cursor&wait=30"
}
# write BASE NAME: the mac writes an Event (it fires sub-events) through BASE.
write() {
  NIMBUS_URL=$1 api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Shared\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"$2\",\"recordType\":\"Event\",\"fields\":{}}}]}"
  expect_item_codes ok "write $2 through $1"
}
# expect_revoked_empty NAME: the waiter NAME answered within 2 s of REVOKED_US, with nothing in it.
expect_revoked_empty() {
  lp_finish "$1" 35
  local ms=$(( (LP_DONE_US - REVOKED_US) / 1000 ))
  [ "$LP_STATUS" = 200 ] || fail "$1: status $LP_STATUS, body ${LP_BODY:0:300}"
  [[ $LP_BODY != *after-revocation* ]] || fail "$1 delivered a record written after the revocation: ${LP_BODY:0:400}"
  local body; body=$(printf '%s' "$LP_BODY" | sed 's/^ *//')
  case $1 in
    *-records) [[ $body == '{"zoneID":{"zoneName":"Shared"},"records":[],'* ]] || fail "$1: not an empty answer: ${body:0:300}" ;;
    *-zones) [[ $body == '{"zones":[],'* ]] || fail "$1: not an empty answer: ${body:0:300}" ;;
    *-poll) [[ $body == '{"notifications":[],'* ]] || fail "$1: not an empty answer: ${body:0:300}" ;;
  esac
  [ "$ms" -lt 2000 ] || fail "$1: answered ${ms} ms after the revocation (wait 30 s; limit 2000 ms)"
  ok "$1: answered empty ${ms} ms after the revocation"
}
# expect_refused TOKEN BASE WHAT: the device's next request on BASE is 401 AUTHENTICATION_FAILED.
expect_refused() {
  NIMBUS_URL=$2 api "$1" zones/changes '{}'
  expect_api_error 401 AUTHENTICATION_FAILED "$3"
  ok "$3: 401 AUTHENTICATION_FAILED"
}

note "the phone waits on A; the mac revokes it through B and writes at once"
park_all phone "$PHONE" "$A_URL" "$A_URL"
wait_metric nimbus_longpoll_waiters 3 5 "$A_URL" || fail "A's waiter gauge is '$LP_METRIC', expected 3"
REVOKED_US=$(now_us)
NIMBUS_URL=$B_URL request POST /devices/revoke -H "Authorization: Bearer $MAC" --data-binary "{\"tokenID\":\"$PHONE_ID\"}"
expect_status 200 "the mac revokes the phone through B"
write "$B_URL" after-revocation-1
for name in phone-records phone-zones phone-poll; do expect_revoked_empty "$name"; done
wait_metric nimbus_longpoll_waiters 0 2 "$A_URL" || fail "A still holds '$LP_METRIC' waiters"
expect_refused "$PHONE" "$A_URL" "the phone's next request on A"
lp_get phone-again "$PHONE" "$A_URL/webcourier/1/x?wait=30"
lp_finish phone-again 5
[ "$LP_STATUS" = 401 ] || fail "the phone's next webcourier poll answered $LP_STATUS: ${LP_BODY:0:200}"

note "the tablet waits on A and B; 'nimbus token revoke' (the CLI) revokes it"
park_all tablet "$TABLET" "$A_URL" "$B_URL"
wait_metric nimbus_longpoll_waiters 1 5 "$A_URL" || fail "A's waiter gauge is '$LP_METRIC', expected 1"
wait_metric nimbus_longpoll_waiters 2 5 "$B_URL" || fail "B's waiter gauge is '$LP_METRIC', expected 2"
REVOKED_US=$(now_us)
nimbus_admin token revoke "$TABLET_ID" >/dev/null
# No write this time: only the revocation's notice can answer them before their wait ends.
for name in tablet-records tablet-zones tablet-poll; do expect_revoked_empty "$name"; done
expect_refused "$TABLET" "$B_URL" "the tablet's next request on B"

NIMBUS_URL=$A_URL NIMBUS_LOG=$A_LOG expect_no_server_errors
NIMBUS_URL=$B_URL NIMBUS_LOG=$B_LOG expect_no_server_errors
for pid in "$A_PID" "$B_PID"; do
  stop_nimbus "$pid" 20 || fail "nimbus pid $pid did not stop cleanly"
done
ok "both instances stopped"
