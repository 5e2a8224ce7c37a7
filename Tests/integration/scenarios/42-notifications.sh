#!/usr/bin/env bash
# Subscriptions and notification channels (issue 4 items 2–3, docs/api.md "Subscriptions and
# notifications", Details → Notifications), in production with the AppLocker schema:
# - the app's subscriptions (sub-blocked on BlockedAppEvent create, sub-failed-auth on
#   FailedAuthEvent create, title + sound);
# - a device offline during 50 writes by another device gets all 50 notifications in write order
#   from its last cursor (pages of 16: moreComing/cursor), with alert and desiredKeys fields; the
#   writing device gets none of its own (replay and live poll), also when more than a page of its
#   own notifications precede another device's (a waiting poll must still wake); atomic failures
#   and idempotent create retries notify nothing;
# - firesOnce fires once and is gone (also under concurrent writes in several zones); zone and
#   database subscriptions; firesOn delete with the predicate evaluated against the record as it
#   was; DELETE_SELF cascades notify their deletes; subscriptions/list|lookup, update and item
#   errors;
# - another user's token on the channel is NOT_FOUND; forged or foreign cursors and bad waits are
#   BAD_REQUEST; bad tokens 401.
source "$(dirname "$0")/../lib.sh"

API_ENV=production
start_store_server --default-results-limit 16
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
issue_token MAC alice mac
issue_token PHONE alice phone
issue_token BOB bob bobs-mac

zone_op() { printf '{"operationType":"create","zone":{"zoneID":{"zoneName":"%s"}}}' "$1"; }
api_ok "$MAC" zones/modify "{\"operations\":[$(zone_op Events),$(zone_op Lists)]}"

# subscribe TOKEN JSON...: subscriptions/modify create of each subscription; every item must be saved.
subscribe() {
  local token=$1 ops="" sub; shift
  for sub in "$@"; do ops+="${ops:+,}{\"operationType\":\"create\",\"subscription\":$sub}"; done
  api_ok "$token" subscriptions/modify "{\"operations\":[$ops]}"
  [[ $HTTP_BODY != *serverErrorCode* ]] || fail "subscriptions/modify refused an item: $HTTP_BODY"
}
# list_subscriptions TOKEN: GET subscriptions/list (200).
list_subscriptions() {
  request GET "$(api_path subscriptions/list)" -H "Authorization: Bearer $1"
  expect_status 200 "subscriptions/list"
}
# event NAME TYPE APP: a create operation of an AppLocker event (no photoAsset: ASSETID).
event() {
  printf '{"operationType":"create","record":{"recordName":"%s","recordType":"%s","fields":{"appName":{"value":"%s"},"bundleID":{"value":"com.example.%s"},"deviceName":{"value":"Mac mini"},"timestamp":{"value":%s,"type":"TIMESTAMP"}}}}' \
    "$1" "$2" "$3" "$3" "$(( $(date +%s) * 1000 ))"
}
# modify TOKEN ZONE OPS...: records/modify (non-atomic) of the operations.
modify() {
  local token=$1 zone=$2 ops; shift 2
  ops=$(IFS=,; echo "$*")
  api_ok "$token" records/modify "{\"zoneID\":{\"zoneName\":\"$zone\"},\"operations\":[$ops]}"
}
# collect TOKEN CURSOR: polls the channel (wait 0) from CURSOR, following cursor while moreComing.
# Sets COLLECTED (notification_lines of every page), COLLECTED_RAW (the bodies), CURSOR_AFTER, PAGES.
collect() {
  local token=$1 cursor=$2 lines
  COLLECTED="" COLLECTED_RAW="" PAGES=0
  while :; do
    request GET "${CHANNEL_URL#"$NIMBUS_URL"}?since=$cursor&wait=0" -H "Authorization: Bearer $token"
    expect_status 200 "webcourier poll"
    PAGES=$((PAGES + 1))
    [ "$PAGES" -le 50 ] || fail "more than 50 pages of notifications"
    COLLECTED_RAW+=$HTTP_BODY$'\n'
    lines=$(notification_lines)
    [ -n "$lines" ] && COLLECTED+=$lines$'\n'
    cursor=$(json_field cursor) || fail "a webcourier answer without cursor: $HTTP_BODY"
    [ "$(json_last_field moreComing)" = true ] || break
  done
  CURSOR_AFTER=$cursor
}
# expect_collected WHAT EXPECTED_LINES: COLLECTED equals the expected lines.
expect_collected() {
  [ "$COLLECTED" = "$2" ] || fail "$1: expected notifications
$2
got
$COLLECTED"
  ok "$1"
}

note "the AppLocker subscriptions, as the app makes them"
subscribe "$PHONE" \
  '{"subscriptionID":"sub-blocked","subscriptionType":"query","query":{"recordType":"BlockedAppEvent","filterBy":[]},"firesOn":["create"],"notificationInfo":{"title":"Blocked app opened","soundName":"default"}}' \
  '{"subscriptionID":"sub-failed-auth","subscriptionType":"query","query":{"recordType":"FailedAuthEvent"},"firesOn":["create"],"notificationInfo":{"title":"Failed unlock attempt","alertBody":"Someone tried to open a locked app","soundName":"alarm.caf","shouldSendContentAvailable":true,"desiredKeys":["appName","deviceName"]}}'
list_subscriptions "$MAC"
ids=$(printf '%s' "$HTTP_BODY" | grep -a -o '"subscriptionID":"[^"]*"' | sed 's/.*:"//; s/"$//' | tr '\n' ' ')
[ "$ids" = "sub-blocked sub-failed-auth " ] || fail "subscriptions/list (from another device of the user): '$ids' in $HTTP_BODY"
[[ $HTTP_BODY == *'"firesOn":["create"]'* ]] || fail "subscriptions/list lost firesOn: $HTTP_BODY"
ok "both subscriptions saved and listed"

api_ok "$PHONE" tokens/create '{}'
CHANNEL_URL=$(json_field webcourierURL) C0=$(json_field cursor)
[[ $CHANNEL_URL == "$NIMBUS_URL/webcourier/1/"* ]] || fail "webcourierURL $CHANNEL_URL is not absolute under $NIMBUS_URL"
[ -n "$(json_field apnsToken)" ] && [ -n "$C0" ] || fail "tokens/create without apnsToken or cursor: $HTTP_BODY"
api_ok "$MAC" tokens/create '{}'
[ "$(json_field webcourierURL)" = "$CHANNEL_URL" ] || fail "two devices of one user got different channels"

note "the phone is offline while the mac writes 50 events (and other records no subscription matches)"
expected=""
for i in $(seq 1 50); do
  n=$(printf 'evt-%02d' "$i")
  if (( i % 2 == 1 )); then type=BlockedAppEvent sub=sub-blocked; else type=FailedAuthEvent sub=sub-failed-auth; fi
  if (( i % 4 == 1 || i % 4 == 2 )); then app=Safari; else app=Mail; fi
  modify "$MAC" Events "$(event "$n" "$type" "$app")"
  expect_item_codes ok "create $n"
  expected+="$sub query recordCreated $n $type Events"$'\n'
  if (( i % 10 == 0 )); then
    modify "$MAC" _defaultZone "{\"operationType\":\"create\",\"record\":{\"recordName\":\"cmd-$i\",\"recordType\":\"RemoteCommand\",\"fields\":{\"action\":{\"value\":\"lockAll\"},\"sourceDevice\":{\"value\":\"mac\"}}}}"
    modify "$MAC" Lists "{\"operationType\":\"forceUpdate\",\"record\":{\"recordName\":\"locked-mac\",\"recordType\":\"LockedAppList\",\"fields\":{\"deviceName\":{\"value\":\"mac $i\"}}}}"
  fi
done
collect "$PHONE" "$C0"
expect_collected "the phone gets all 50 notifications in write order, in $PAGES pages" "$expected"
[ "$PAGES" -ge 4 ] || fail "50 notifications at 16 a page came in $PAGES pages (moreComing paging not exercised)"
phone_cursor=$CURSOR_AFTER
ids=$(printf '%s' "$COLLECTED_RAW" | grep -a -o '"notificationID":"[^"]*"' | sort -u | wc -l)
[ "$ids" -eq 50 ] || fail "$ids distinct notificationIDs for 50 notifications"
blocked=$(json_read objects notificationID <<<"$COLLECTED_RAW" | grep -a '"recordName":"evt-01"')
failed=$(json_read objects notificationID <<<"$COLLECTED_RAW" | grep -a '"recordName":"evt-02"')
[[ $blocked == *'"alert":{'* ]] && [ "$(json_field title "$blocked")" = "Blocked app opened" ] && [ "$(json_field soundName "$blocked")" = default ] \
  || fail "sub-blocked's alert lacks title/soundName: $blocked"
[[ $blocked != *'"fields"'* ]] && [ "$(json_field contentAvailable "$blocked")" = false ] || fail "sub-blocked's notification: $blocked"
[ "$(json_field title "$failed")" = "Failed unlock attempt" ] && [ "$(json_field body "$failed")" = "Someone tried to open a locked app" ] \
  && [ "$(json_field soundName "$failed")" = alarm.caf ] && [ "$(json_field contentAvailable "$failed")" = true ] \
  || fail "sub-failed-auth's alert/contentAvailable: $failed"
fields=$(printf '%s' "$failed" | grep -a -o '"fields":{.*}}' | head -n 1)
[[ $fields == *'"appName":{"value":"Safari","type":"STRING"}'* || $fields == *'"appName":{"type":"STRING","value":"Safari"}'* ]] \
  && [[ $fields == *'"deviceName":'* ]] && [[ $fields != *bundleID* ]] || fail "sub-failed-auth's desiredKeys fields: $failed"
ok "alerts carry title/body/soundName; desiredKeys fields hold just appName and deviceName"

collect "$PHONE" "$phone_cursor"
expect_collected "polling again from the last cursor gives nothing" ""
collect "$MAC" "$C0"
expect_collected "the writing device replays the same range and gets none of its own" ""
[ "$CURSOR_AFTER" = "$phone_cursor" ] || note "the mac's cursor after the replay ($CURSOR_AFTER) differs from the phone's ($phone_cursor)"

note "live polls: the phone is woken by the mac's write, the mac's own poll is not"
lp_get live-phone "$PHONE" "$CHANNEL_URL?since=$phone_cursor&wait=20"
lp_get live-mac "$MAC" "$CHANNEL_URL?since=$phone_cursor&wait=3"
wait_metric nimbus_longpoll_waiters 2 5 || fail "two parked polls expected, gauge $LP_METRIC"
sent=$(now_us)
modify "$MAC" Events "$(event evt-live BlockedAppEvent Safari)"
lp_finish live-phone 10
[ "$LP_STATUS" = 200 ] || fail "the phone's live poll: $LP_STATUS $LP_BODY"
ms=$(( (LP_DONE_US - sent) / 1000 ))
[ "$ms" -lt 1000 ] || fail "the phone's live poll answered ${ms} ms after the write"
[ "$(notification_lines "$LP_BODY")" = "sub-blocked query recordCreated evt-live BlockedAppEvent Events" ] || fail "the phone's live poll: $LP_BODY"
live_cursor=$(json_field cursor "$LP_BODY")
ok "the phone's live poll answered ${ms} ms after the write with evt-live"
lp_finish live-mac 10
[ "$LP_STATUS" = 200 ] && [ "$(notification_lines "$LP_BODY")" = "" ] || fail "the mac's own poll: $LP_STATUS $LP_BODY"
[ "$LP_ELAPSED_MS" -ge 2500 ] || fail "the mac's own poll ended after ${LP_ELAPSED_MS} ms (its own write woke it with nothing?)"
ok "the mac's own poll got nothing and ended at its wait (${LP_ELAPSED_MS} ms)"

note "a waiting poll behind more than a page (16) of its own device's notifications still wakes for another device's"
lp_get own-page "$MAC" "$CHANNEL_URL?since=$live_cursor&wait=8"
wait_metric nimbus_longpoll_waiters 1 5 || fail "the mac's poll is not parked: gauge $LP_METRIC"
ops=""
for i in $(seq 1 20); do ops+="${ops:+,}$(event "$(printf 'own-%02d' "$i")" BlockedAppEvent Mail)"; done
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Events\"},\"operations\":[$ops]}"
expect_item_codes "$(printf 'ok %.0s' $(seq 1 20) | sed 's/ $//')" "20 events by the mac"
sent=$(now_us)
modify "$PHONE" Events "$(event from-phone BlockedAppEvent Safari)"
lp_finish own-page 15
ms=$(( (LP_DONE_US - sent) / 1000 ))
if [ "$LP_STATUS" = 200 ] && [ "$ms" -lt 1000 ]; then
  ok "the mac's poll answered ${ms} ms after the phone's write"
else
  defer_fail "a waiting poll (GET webcourierURL?since=C&wait=8 by the mac) stays parked when more than a page of the mac's own notifications precede the phone's: answered $LP_STATUS after ${ms} ms with '$(printf '%s' "$LP_BODY" | sed 's/^ *//' | head -c 200)'"
fi
collect "$MAC" "$live_cursor"
expect_collected "replayed from its cursor, the mac gets only the phone's notification (not its own 20)" \
  "sub-blocked query recordCreated from-phone BlockedAppEvent Events
"
collect "$PHONE" "$live_cursor"
[ "$(printf '%s' "$COLLECTED" | grep -c '^sub-blocked query recordCreated own-')" -eq 20 ] || fail "the phone did not get the mac's 20 notifications: $COLLECTED"
live_cursor=$CURSOR_AFTER

note "no commit, no notification: an atomic failure and an idempotent create retry notify nothing"
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Events\"},\"atomic\":true,\"operations\":[$(event evt-atomic BlockedAppEvent Safari),{\"operationType\":\"forceUpdate\",\"record\":{\"recordName\":\"evt-01\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"Changed\"}}}}]}"
[[ $HTTP_BODY == *ATOMIC_ERROR* ]] || fail "the atomic request did not fail as a whole: $HTTP_BODY"
api_ok "$MAC" records/lookup '{"zoneID":{"zoneName":"Events"},"records":[{"recordName":"evt-01"}]}'
evt01=$(record_items | head -n 1)
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Events\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"evt-01\",\"recordType\":\"BlockedAppEvent\",\"fields\":$(printf '%s' "$evt01" | grep -a -o '"fields":{.*}},"created"' | sed 's/^"fields"://; s/,"created"$//')}}]}"
expect_item_codes ok "the idempotent create retry of evt-01"
modify "$MAC" Events "$(event evt-51 BlockedAppEvent Safari)" "{\"operationType\":\"update\",\"record\":{\"recordName\":\"evt-02\",\"recordType\":\"FailedAuthEvent\",\"recordChangeTag\":\"zzz\",\"fields\":{}}}" "$(event evt-52 FailedAuthEvent Mail)"
collect "$PHONE" "$live_cursor"
expect_collected "only the two saved records of a partly failed request notify" \
"sub-blocked query recordCreated evt-51 BlockedAppEvent Events
sub-failed-auth query recordCreated evt-52 FailedAuthEvent Events
"
cursor=$CURSOR_AFTER

note "firesOnce: fires once and is deleted in the same transaction"
subscribe "$PHONE" '{"subscriptionID":"cmd-once","subscriptionType":"query","query":{"recordType":"RemoteCommand","filterBy":[{"fieldName":"action","comparator":"EQUALS","fieldValue":{"value":"unlockAll"}}]},"firesOn":["create"],"firesOnce":true,"notificationInfo":{"alertBody":"Unlock requested"}}'
cmd() { printf '{"operationType":"create","record":{"recordName":"%s","recordType":"RemoteCommand","fields":{"action":{"value":"%s"},"sourceDevice":{"value":"mac"}}}}' "$1" "$2"; }
modify "$MAC" _defaultZone "$(cmd once-lock lockAll)" "$(cmd once-1 unlockAll)" "$(cmd once-2 unlockAll)"
modify "$MAC" _defaultZone "$(cmd once-3 unlockAll)"
collect "$PHONE" "$cursor"
expect_collected "cmd-once fired once, for the first matching record" "cmd-once query recordCreated once-1 RemoteCommand _defaultZone
"
alert=$(printf '%s' "$COLLECTED_RAW" | grep -a -o '"alert":{[^}]*}')
[ "$alert" = '"alert":{"body":"Unlock requested"}' ] || fail "an alert with only a body should have only body: $alert"
cursor=$CURSOR_AFTER
api_ok "$PHONE" subscriptions/lookup '{"subscriptions":[{"subscriptionID":"cmd-once"},{"subscriptionID":"sub-blocked"}]}'
first=$(json_read objects subscriptionID <<<"$HTTP_BODY" | sed -n 1p)
[ "$(json_field serverErrorCode "$first")" = NOT_FOUND ] && [ "$(json_field subscriptionID "$first")" = cmd-once ] \
  || fail "subscriptions/lookup of the spent cmd-once: $HTTP_BODY"
[[ $HTTP_BODY == *'"subscriptionID":"sub-blocked","subscriptionType":"query"'* ]] || fail "subscriptions/lookup of sub-blocked: $HTTP_BODY"
list_subscriptions "$PHONE"
[[ $HTTP_BODY != *cmd-once* ]] || fail "subscriptions/list still has the spent cmd-once: $HTTP_BODY"
ok "cmd-once is NOT_FOUND in lookup and gone from the list"

note "zone subscription on Lists: create, update, delete; writes elsewhere do not fire it"
subscribe "$PHONE" '{"subscriptionID":"lists-zone","subscriptionType":"zone","zoneID":{"zoneName":"Lists"},"notificationInfo":{"shouldSendContentAvailable":true}}'
list_op() { printf '{"operationType":"%s","record":{"recordName":"%s","recordType":"LockedAppList","fields":{"deviceName":{"value":"%s"}}}}' "$1" "$2" "$3"; }
modify "$MAC" Lists "$(list_op create locked-phone phone)"
modify "$MAC" Lists "$(list_op forceUpdate locked-phone 'phone 2')"
modify "$MAC" _defaultZone "$(cmd zone-elsewhere lockAll)"
modify "$MAC" Lists '{"operationType":"forceDelete","record":{"recordName":"locked-phone"}}'
collect "$PHONE" "$cursor"
expect_collected "lists-zone: recordCreated, recordUpdated, recordDeleted of locked-phone, nothing for _defaultZone" \
"lists-zone zone recordCreated locked-phone LockedAppList Lists
lists-zone zone recordUpdated locked-phone LockedAppList Lists
lists-zone zone recordDeleted locked-phone LockedAppList Lists
"
[[ $COLLECTED_RAW != *'"alert"'* ]] || fail "a subscription without title/body/sound produced an alert: $COLLECTED_RAW"
cursor=$CURSOR_AFTER

note "database subscription (firesOn update and delete): every zone, filtered by firesOn"
subscribe "$PHONE" '{"subscriptionID":"db-changes","subscriptionType":"database","firesOn":["update","delete"]}'
modify "$MAC" _defaultZone "$(cmd db-1 lockAll)"
modify "$MAC" Lists "$(list_op forceUpdate locked-mac 'mac again')"
modify "$MAC" _defaultZone '{"operationType":"forceDelete","record":{"recordName":"db-1"}}'
collect "$PHONE" "$cursor"
expect_collected "db-changes fires on the update in Lists and the delete in _defaultZone, not on the create" \
"db-changes database recordUpdated locked-mac LockedAppList Lists
lists-zone zone recordUpdated locked-mac LockedAppList Lists
db-changes database recordDeleted db-1 RemoteCommand _defaultZone
"
cursor=$CURSOR_AFTER
api_ok "$PHONE" subscriptions/modify '{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"db-changes"}},{"operationType":"delete","subscription":{"subscriptionID":"lists-zone"}},{"operationType":"delete","subscription":{"subscriptionID":"no-such"}}]}'
[ "$(printf '%s' "$HTTP_BODY" | grep -a -o '"deleted":true' | wc -l)" -eq 2 ] && [[ $HTTP_BODY == *'"subscriptionID":"no-such"'*NOT_FOUND* || $HTTP_BODY == *NOT_FOUND*'"subscriptionID":"no-such"'* ]] \
  || fail "subscriptions/modify delete: $HTTP_BODY"

note "firesOn delete: the predicate is evaluated against the record as it was"
subscribe "$PHONE" '{"subscriptionID":"safari-removed","subscriptionType":"query","zoneID":{"zoneName":"Events"},"query":{"recordType":"BlockedAppEvent","filterBy":[{"fieldName":"appName","comparator":"EQUALS","fieldValue":{"value":"Safari","type":"STRING"}}]},"firesOn":["delete"],"notificationInfo":{"title":"Safari event removed","desiredKeys":["appName"]}}'
api_ok "$MAC" records/lookup '{"zoneID":{"zoneName":"Events"},"records":[{"recordName":"evt-01"}]}'
tag=$(record_tag evt-01)
modify "$MAC" Events "{\"operationType\":\"delete\",\"record\":{\"recordName\":\"evt-01\",\"recordChangeTag\":\"$tag\"}}"
expect_item_codes ok "delete evt-01 (Safari)"
modify "$MAC" Events '{"operationType":"forceDelete","record":{"recordName":"evt-03"}}'
modify "$MAC" Events '{"operationType":"forceDelete","record":{"recordName":"evt-02"}}'
modify "$MAC" Events '{"operationType":"forceDelete","record":{"recordName":"evt-05"}}' "$(event evt-53 BlockedAppEvent Safari)"
collect "$PHONE" "$cursor"
expect_collected "deleting Safari events notifies; a Mail event and a Safari FailedAuthEvent do not" \
"safari-removed query recordDeleted evt-01 BlockedAppEvent Events
safari-removed query recordDeleted evt-05 BlockedAppEvent Events
sub-blocked query recordCreated evt-53 BlockedAppEvent Events
"
removed=$(json_read objects notificationID <<<"$COLLECTED_RAW" | grep -a '"recordName":"evt-01"')
[[ $removed == *'"appName":{"value":"Safari","type":"STRING"}'* || $removed == *'"appName":{"type":"STRING","value":"Safari"}'* ]] \
  || fail "the delete notification's fields are not the record as it was: $removed"
ok "the delete notification carries appName Safari from the deleted record"
cursor=$CURSOR_AFTER

note "subscriptions/modify: update changes what fires; bad subscriptions are item errors"
api_ok "$PHONE" subscriptions/modify '{"operations":[{"operationType":"update","subscription":{"subscriptionID":"sub-blocked","subscriptionType":"query","query":{"recordType":"BlockedAppEvent"},"firesOn":["create"],"notificationInfo":{"title":"Blocked (v2)","soundName":"default"}}},{"operationType":"update","subscription":{"subscriptionID":"never-made","subscriptionType":"database"}},{"operationType":"create","subscription":{"subscriptionID":"bad-zone","subscriptionType":"zone","zoneID":{"zoneName":"NoSuchZone"}}},{"operationType":"create","subscription":{"subscriptionID":"bad-type","subscriptionType":"query","query":{"recordType":"NotDeployed"}}},{"operationType":"create","subscription":{"subscriptionID":"bad-comparator","subscriptionType":"query","query":{"recordType":"BlockedAppEvent","filterBy":[{"fieldName":"appName","comparator":"SOUNDS_LIKE","fieldValue":{"value":"x"}}]}}}]}'
items=$(json_read rows subscriptionID subscriptionID serverErrorCode=ok <<<"$HTTP_BODY" | while read -r id code; do printf '%s:%s ' "$id" "$code"; done)
# docs/api.md says nothing about subscriptions on undeployed types; records/query answers BAD_REQUEST
# for them in production, so that is what we expect to see, but only note it otherwise.
case $items in
  *"bad-type:ok "*) note "observation: a production query subscription on the undeployed type NotDeployed is accepted (records/query would be BAD_REQUEST)"
                    items=${items/bad-type:ok /bad-type:BAD_REQUEST } ;;
esac
[ "$items" = "sub-blocked:ok never-made:NOT_FOUND bad-zone:ZONE_NOT_FOUND bad-type:BAD_REQUEST bad-comparator:BAD_REQUEST " ] \
  || fail "subscriptions/modify items: '$items' in $HTTP_BODY"
modify "$MAC" Events "$(event evt-v2 BlockedAppEvent Safari)"
collect "$PHONE" "$cursor"
[ "$COLLECTED" = "sub-blocked query recordCreated evt-v2 BlockedAppEvent Events
" ] && [ "$(json_field title "$COLLECTED_RAW")" = "Blocked (v2)" ] || fail "after the update of sub-blocked: $COLLECTED_RAW"
cursor=$CURSOR_AFTER
ok "update of sub-blocked takes effect; NOT_FOUND, ZONE_NOT_FOUND and BAD_REQUEST items for bad ones"

note "DELETE_SELF cascades notify their deletes too (development database, its own channel)"
(
  API_ENV=development prod_url=$CHANNEL_URL
  api_ok "$MAC" zones/modify "{\"operations\":[$(zone_op Tree)]}"
  subscribe "$PHONE" \
    '{"subscriptionID":"tree-deletes","subscriptionType":"zone","zoneID":{"zoneName":"Tree"},"firesOn":["delete"]}' \
    '{"subscriptionID":"child-a-gone","subscriptionType":"query","query":{"recordType":"Child","filterBy":[{"fieldName":"label","comparator":"EQUALS","fieldValue":{"value":"a","type":"STRING"}}]},"firesOn":["delete"]}'
  api_ok "$PHONE" tokens/create '{}'
  CHANNEL_URL=$(json_field webcourierURL) dev_cursor=$(json_field cursor)
  [ "$CHANNEL_URL" != "$prod_url" ] || fail "development and production share a notification channel"
  child() { printf '{"operationType":"create","record":{"recordName":"%s","recordType":"Child","fields":{"label":{"value":"%s"},"parent":{"value":{"recordName":"%s","action":"DELETE_SELF"},"type":"REFERENCE"}}}}' "$1" "$2" "$3"; }
  modify "$MAC" Tree '{"operationType":"create","record":{"recordName":"P","recordType":"Parent","fields":{"label":{"value":"root"}}}}'
  modify "$MAC" Tree "$(child C1 a P)" "$(child C2 b P)"
  modify "$MAC" Tree "$(child G a C1)"
  expect_item_codes ok "create G"
  modify "$MAC" Tree '{"operationType":"forceDelete","record":{"recordName":"P"}}'
  collect "$PHONE" "$dev_cursor"
  got=$(printf '%s' "$COLLECTED" | sort)
  want=$(printf '%s\n' "child-a-gone query recordDeleted C1 Child Tree" "child-a-gone query recordDeleted G Child Tree" \
    "tree-deletes zone recordDeleted C1 Child Tree" "tree-deletes zone recordDeleted C2 Child Tree" \
    "tree-deletes zone recordDeleted G Child Tree" "tree-deletes zone recordDeleted P Parent Tree" | sort)
  [ "$got" = "$want" ] || fail "deleting P (C1, C2 and G cascade): expected
$want
got
$got"
  ok "deleting P notifies P, C1, C2, G (zone subscription) and C1, G (label a, as they were)"
) || exit 1

note "firesOnce under concurrent writes in 8 zones: still exactly one notification"
zones=""
for z in 1 2 3 4 5 6 7 8; do zones+="${zones:+,}$(zone_op "Par$z")"; done
api_ok "$MAC" zones/modify "{\"operations\":[$zones]}"
once_total=0 once_rounds=12
for round in $(seq 1 "$once_rounds"); do
  subscribe "$PHONE" "{\"subscriptionID\":\"race-once-$round\",\"subscriptionType\":\"database\",\"firesOn\":[\"create\"],\"firesOnce\":true}"
  : >"$TEST_TMP/race.list"
  for z in 1 2 3 4 5 6 7 8; do
    printf 'POST %s %s {"zoneID":{"zoneName":"Par%s"},"operations":[{"operationType":"create","record":{"recordName":"race-%s-%s","recordType":"RemoteCommand","fields":{"action":{"value":"lockAll"}}}}]}\n' \
      "$NIMBUS_URL$(api_path records/modify)" "$MAC" "$z" "$round" "$z" >>"$TEST_TMP/race.list"
  done
  lp_batch race 8
  lp_batch_wait race 30 || fail "concurrent writes did not finish"
  [ "$(grep -c ' 200$' "$TEST_TMP/race.status")" -eq 8 ] || fail "concurrent writes: $(tr '\n' ' ' <"$TEST_TMP/race.status")"
done
collect "$PHONE" "$cursor"
for round in $(seq 1 "$once_rounds"); do
  fired=$(printf '%s' "$COLLECTED" | grep -c "^race-once-$round ")
  once_total=$((once_total + fired))
  [ "$fired" -eq 1 ] || defer_fail "firesOnce race-once-$round fired $fired times for 8 concurrent creates in 8 zones (expected once)"
done
[ "$once_total" -eq "$once_rounds" ] && ok "each firesOnce subscription fired exactly once under concurrent writes"
cursor=$CURSOR_AFTER

note "who may poll, and what a cursor is"
path=${CHANNEL_URL#"$NIMBUS_URL"}
request GET "$path?since=$C0&wait=0" -H "Authorization: Bearer $BOB"
expect_api_error 404 NOT_FOUND "bob polls alice's channel"
request GET "$path?wait=0" -H "Authorization: Bearer $BOB"
expect_api_error 404 NOT_FOUND "bob polls alice's channel without a cursor"
channel=${path##*/}
forged_channel=${channel:0:${#channel}-2}$([ "${channel: -2:1}" = A ] && echo B || echo A)${channel: -1}
request GET "/webcourier/1/$forged_channel?wait=0" -H "Authorization: Bearer $PHONE"
expect_api_error 404 NOT_FOUND "a forged channel id"
ok "another user's token on the channel, and a forged channel, are NOT_FOUND"
forged_cursor=${C0:0:${#C0}-3}$([ "${C0: -3:1}" = A ] && echo B || echo A)${C0: -2}
request GET "$path?since=$forged_cursor&wait=0" -H "Authorization: Bearer $PHONE"
expect_api_error 400 BAD_REQUEST "a forged cursor"
request GET "$path?since=not-a-cursor&wait=0" -H "Authorization: Bearer $PHONE"
expect_api_error 400 BAD_REQUEST "a malformed cursor"
api_ok "$BOB" tokens/create '{}'
bob_cursor=$(json_field cursor) bob_url=$(json_field webcourierURL)
[ "$bob_url" != "$CHANNEL_URL" ] || fail "bob and alice share a channel"
request GET "$path?since=$bob_cursor&wait=0" -H "Authorization: Bearer $PHONE"
expect_api_error 400 BAD_REQUEST "bob's cursor on alice's channel"
request GET "${bob_url#"$NIMBUS_URL"}?since=$bob_cursor&wait=0" -H "Authorization: Bearer $BOB"
expect_status 200 "bob polls his own channel"
[ "$(notification_lines)" = "" ] || fail "bob's channel shows alice's notifications: $HTTP_BODY"
ok "forged, malformed and foreign cursors are BAD_REQUEST; bob's own channel is empty"
for bad in 56 -1 abc; do
  request GET "$path?since=$cursor&wait=$bad" -H "Authorization: Bearer $PHONE"
  expect_api_error 400 BAD_REQUEST "webcourier wait=$bad"
done
request GET "$path?since=$cursor&wait=0" -H "Authorization: Bearer not-a-token"
expect_api_error 401 AUTHENTICATION_FAILED "an unknown token on the channel"
request GET "$path?since=$cursor&wait=0"
expect_api_error 401 AUTHENTICATION_REQUIRED "no token on the channel"
ok "bad waits are BAD_REQUEST; unknown and missing tokens 401"

wait_metric nimbus_longpoll_waiters 0 5 || fail "waiters left at the end: $LP_METRIC"
expect_no_server_errors
finish_scenario
