#!/usr/bin/env bash
# Push, direct: long-poll first across instances (docs/push.md "Long-poll first"). Two real nimbus
# instances on one database, the APNs stand-in: the iPhone's long-poll is parked on instance B, the
# Mac writes through instance A. A sees no waiter of its own; the database's mark of B's parked poll
# (push_long_polls) makes A hold the push for the grace all the same.
#
# - Parked on B, a write through A, the phone re-polls B within the grace → no push, the log says
#   delivered by long-poll.
# - Parked on B, a write through A, no re-poll → one push, after the grace (pushGraceMillis 1,500 ms).
# - Not polling at all → the push goes at once (the mark does not hold pushes of a device that
#   polled long ago).
source "$(dirname "$0")/../lib.sh"
source "$IT_DIR/push.sh"

make_apns_key
standin_start
push_flags
start_store_server "${PUSH_FLAGS[@]}" --admin-listen off
A_URL=$NIMBUS_URL
start_nimbus --database-url "$NIMBUS_DB_URL" "${PUSH_FLAGS[@]}" --admin-listen off
B_URL=$NIMBUS_URL
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice iphone
PHONE_APNS=$(apns_token aa 1)
NIMBUS_URL=$B_URL api_ok "$PHONE" tokens/register "{\"apnsEnvironment\":\"development\",\"apnsToken\":\"$PHONE_APNS\"}"
NIMBUS_URL=$B_URL api_ok "$PHONE" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"blocked",
  "subscriptionType":"query","query":{"recordType":"BlockedAppEvent"},"firesOn":["create"],"notificationInfo":{"title":"App blocked"}}}]}'

event() { # NAME: the Mac writes a BlockedAppEvent through instance A
  NIMBUS_URL=$A_URL api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"$1\",
    \"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"Terminal\"}}}}]}"
}
pushed() { pushes "$PHONE_APNS" | awk -F'\t' -v r="$1" '$8 == r' | wc -l; }

NIMBUS_URL=$B_URL api_ok "$PHONE" tokens/create '{}'
CHANNEL_PATH=$(json_field webcourierURL) C0=$(json_field cursor)
CHANNEL_PATH=/${CHANNEL_PATH#*://*/}

note "parked on B, written through A, re-polled within the grace: no push"
lp_get phone "$PHONE" "$B_URL$CHANNEL_PATH?since=$C0&wait=30"
wait_metric nimbus_longpoll_waiters 1 10 "$B_URL" || fail "the phone's poll did not park on B (waiters: $LP_METRIC)"
[ "$(metric nimbus_longpoll_waiters "$A_URL")" = 0 ] || fail "instance A has a waiter of its own"
event x1
lp_finish phone 10
[ "$LP_STATUS" = 200 ] || fail "the poll parked on B answered $LP_STATUS"
[[ $LP_BODY == *'"x1"'* ]] || fail "the poll parked on B did not deliver x1: $LP_BODY"
C1=$(json_last_field cursor "$LP_BODY") || fail "the poll answered no cursor: $LP_BODY"
NIMBUS_URL=$B_URL request GET "$CHANNEL_PATH?since=$C1" -H "Authorization: Bearer $PHONE"
expect_status 200 "the phone polls B again past x1"
sleep 2.5
[ "$(pushed x1)" = 0 ] || fail "x1 was pushed though the phone's long-poll on B had it (A did not hold the push for the grace)"
[ "$(psql_db "SELECT count(*) FROM push_log WHERE outcome = 'long-poll' AND by_long_poll AND device_token_id = '$PHONE_ID'")" = 1 ] \
  || fail "x1's push is not logged as delivered by long-poll: $(psql_db "SELECT outcome, status FROM push_log")"
ok "x1 reached the poll parked on B; the re-poll within the grace dropped the push A held (none at the stand-in after 2.5 s)"

note "parked on B, written through A, no re-poll: one push after the grace"
lp_get phone "$PHONE" "$B_URL$CHANNEL_PATH?since=$C1&wait=30"
wait_metric nimbus_longpoll_waiters 1 10 "$B_URL" || fail "the phone's second poll did not park on B"
written=$(now_ms)
event x2
lp_finish phone 10
[[ $LP_BODY == *'"x2"'* ]] || fail "the poll parked on B did not deliver x2: $LP_BODY"
wait_push_count "$PHONE_APNS" 1 8 200 || fail "x2 was not pushed within 8 s though the phone did not poll again"
x2=$(pushes "$PHONE_APNS" | awk -F'\t' '$8 == "x2"')
delay=$(( $(cut -f1 <<<"$x2" | head -n 1) - written ))
[ "$delay" -ge 1400 ] || fail "x2 was pushed $delay ms after the write: A did not hold it for the 1,500 ms grace"
[ "$delay" -le 4000 ] || fail "x2 was pushed $delay ms after the write (long after the 1,500 ms grace)"
sleep 1
[ "$(pushed x2)" = 1 ] || fail "x2 pushed $(pushed x2) times"
ok "x2: no re-poll, pushed once $delay ms after the write through A"

note "not polling: the push goes at once"
# The mark lasts the poll's wait (30 s) plus a margin: end it, as a phone asleep for a while has.
psql_db "UPDATE push_long_polls SET until = now() - interval '1 second'" >/dev/null
written=$(now_ms)
event x3
wait_push_count "$PHONE_APNS" 2 8 200 || fail "x3 was not pushed within 8 s"
delay=$(( $(pushes "$PHONE_APNS" | awk -F'\t' '$8 == "x3"' | cut -f1 | head -n 1) - written ))
[ "$delay" -lt 1400 ] || fail "x3 waited $delay ms though the phone's poll mark had ended"
ok "x3: no poll, pushed $delay ms after the write"

NIMBUS_URL=$A_URL expect_no_server_errors
NIMBUS_URL=$B_URL expect_no_server_errors
finish_scenario
