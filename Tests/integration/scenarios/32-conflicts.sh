#!/usr/bin/env bash
# Conflicts (issue 3): two devices update the same record from the same recordChangeTag at the
# same time, round after round: exactly one wins, the other gets a CONFLICT item whose
# serverRecord is the winner's record (its new tag and its value). Updates of different records
# at the same time both win.
source "$(dirname "$0")/../lib.sh"

ROUNDS=${CONFLICT_ROUNDS:-20}

start_store_server
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice phone

api_ok "$MAC" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"shared","recordType":"Counter","fields":{"owner":{"value":"nobody"},"round":{"value":0}}}},{"operationType":"create","record":{"recordName":"mac-own","recordType":"Counter","fields":{"round":{"value":0}}}},{"operationType":"create","record":{"recordName":"phone-own","recordType":"Counter","fields":{"round":{"value":0}}}}]}'
expect_item_codes "ok ok ok" "creates"
tag=$(record_tag shared)
mac_tag=$(record_tag mac-own)
phone_tag=$(record_tag phone-own)

update_body() { # NAME TAG OWNER ROUND
  printf '{"operations":[{"operationType":"%s","record":{"recordName":"%s","recordType":"Counter","recordChangeTag":"%s","fields":{"owner":{"value":"%s"},"round":{"value":%s}}}}]}' \
    "${KIND:-update}" "$1" "$2" "$3" "$4"
}

wins_mac=0 wins_phone=0
note "$ROUNDS rounds: both devices update 'shared' from tag $tag at once"
for ((round = 1; round <= ROUNDS; round++)); do
  KIND=update
  [ $((round % 4)) -eq 0 ] && KIND=replace   # every fourth round races two replaces
  api_call "$MAC" records/modify "$(update_body shared "$tag" mac "$round")" >"$TEST_TMP/mac.$round" &
  mac_pid=$!
  api_call "$PHONE" records/modify "$(update_body shared "$tag" phone "$round")" >"$TEST_TMP/phone.$round" &
  phone_pid=$!
  wait "$mac_pid" "$phone_pid"
  mac_out=$(cat "$TEST_TMP/mac.$round") phone_out=$(cat "$TEST_TMP/phone.$round")
  [ "${mac_out##* }" = 200 ] && [ "${phone_out##* }" = 200 ] || fail "round $round: statuses ${mac_out##* } and ${phone_out##* }: $mac_out / $phone_out"
  mac_code=$(item_codes "${mac_out% *}") phone_code=$(item_codes "${phone_out% *}")
  case "$mac_code $phone_code" in
    "ok CONFLICT") winner=mac winner_out=${mac_out% *} loser_out=${phone_out% *}; wins_mac=$((wins_mac + 1)) ;;
    "CONFLICT ok") winner=phone winner_out=${phone_out% *} loser_out=${mac_out% *}; wins_phone=$((wins_phone + 1)) ;;
    *) fail "round $round ($KIND from $tag): expected one winner and one CONFLICT, got mac=$mac_code phone=$phone_code: $mac_out / $phone_out" ;;
  esac
  new_tag=$(record_tag shared "$winner_out")
  [ -n "$new_tag" ] && [ "$new_tag" != "$tag" ] || fail "round $round: the winner's tag '$new_tag' (was $tag)"
  loser_item=$(record_items "$loser_out")
  expect_error_body CONFLICT "$loser_item"
  contains "$loser_item" -a -q '"serverRecord":{"recordName":"shared","recordType":"Counter","recordChangeTag":"'"$new_tag"'","fields":{' \
    || fail "round $round: the CONFLICT's serverRecord is not the winner's record (tag $new_tag): $loser_item"
  server_record=${loser_item#*\"serverRecord\":}
  [ "$(field_value shared owner "[$server_record")" = "\"$winner\"" ] || fail "round $round: serverRecord owner is $(field_value shared owner "[$server_record"), the winner is $winner"
  [ "$(field_value shared round "[$server_record")" = "$round" ] || fail "round $round: serverRecord round is $(field_value shared round "[$server_record")"
  contains "$server_record" -a -q '"modified":{"timestamp":[0-9]*,"userRecordName":"[^"]*","deviceID":"'"$winner"'"}' \
    || fail "round $round: serverRecord.modified is not the winner's device $winner: $server_record"
  api_ok "$PHONE" records/lookup '{"records":[{"recordName":"shared"}]}'
  [ "$(record_tag shared)" = "$new_tag" ] || fail "round $round: stored tag $(record_tag shared), the winner got $new_tag"
  [ "$(field_value shared owner)" = "\"$winner\"" ] || fail "round $round: stored owner $(field_value shared owner), the winner is $winner"
  tag=$new_tag
done
ok "$ROUNDS rounds (updates and replaces): one winner each (mac $wins_mac, phone $wins_phone), the other a CONFLICT carrying the winner's record"

note "the loser retries with the serverRecord's tag and wins"
api_ok "$PHONE" records/modify "$(KIND=update update_body shared "$tag" phone-retry 99)"
expect_item_codes ok "retry with the current tag"
ok "retry with the serverRecord's tag succeeds"

note "concurrent updates of different records both win"
for ((round = 1; round <= 5; round++)); do
  api_call "$MAC" records/modify "$(KIND=update update_body mac-own "$mac_tag" mac "$round")" >"$TEST_TMP/mac-own" &
  mac_pid=$!
  api_call "$PHONE" records/modify "$(KIND=update update_body phone-own "$phone_tag" phone "$round")" >"$TEST_TMP/phone-own" &
  phone_pid=$!
  wait "$mac_pid" "$phone_pid"
  mac_out=$(cat "$TEST_TMP/mac-own") phone_out=$(cat "$TEST_TMP/phone-own")
  [ "$(item_codes "${mac_out% *}") $(item_codes "${phone_out% *}")" = "ok ok" ] || fail "round $round: $mac_out / $phone_out"
  mac_tag=$(record_tag mac-own "${mac_out% *}") phone_tag=$(record_tag phone-own "${phone_out% *}")
  [ "$mac_tag" != "$phone_tag" ] || fail "two saves got the same tag $mac_tag"
done
ok "5 rounds of concurrent updates of two records: both win every time, distinct tags"

note "a stale delete and a stale forceUpdate"
api_ok "$MAC" records/modify '{"operations":[{"operationType":"delete","record":{"recordName":"shared","recordChangeTag":"'"$tag"'"}}]}'
expect_item_codes CONFLICT "delete with a stale tag"
contains "$HTTP_BODY" -a -q '"serverRecord":{"recordName":"shared"' || fail "stale delete without serverRecord: $HTTP_BODY"
api_ok "$MAC" records/modify '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"shared","recordType":"Counter","recordChangeTag":"'"$tag"'","fields":{"owner":{"value":"forced"}}}}]}'
expect_item_codes ok "forceUpdate ignores the stale tag"
ok "delete with a stale tag is a CONFLICT with serverRecord; forceUpdate ignores tags"

note "concurrent creates of one new name: same content both succeed with one tag; other content: one EXISTS"
for ((round = 1; round <= 5; round++)); do
  same='{"operations":[{"operationType":"create","record":{"recordName":"same-'$round'","recordType":"Counter","fields":{"owner":{"value":"both"},"round":{"value":'$round'}}}}]}'
  api_call "$MAC" records/modify "$same" >"$TEST_TMP/mac-same" &
  mac_pid=$!
  api_call "$PHONE" records/modify "$same" >"$TEST_TMP/phone-same" &
  phone_pid=$!
  wait "$mac_pid" "$phone_pid"
  mac_out=$(cat "$TEST_TMP/mac-same") phone_out=$(cat "$TEST_TMP/phone-same")
  [ "$(item_codes "${mac_out% *}") $(item_codes "${phone_out% *}")" = "ok ok" ] || fail "round $round: identical concurrent creates: $mac_out / $phone_out"
  [ "$(record_tag "same-$round" "${mac_out% *}")" = "$(record_tag "same-$round" "${phone_out% *}")" ] || fail "round $round: identical creates answered two tags: $mac_out / $phone_out"
  api_call "$MAC" records/modify "$(KIND=create update_body "new-$round" "" mac "$round" | sed 's/"recordChangeTag":"",//')" >"$TEST_TMP/mac-new" &
  mac_pid=$!
  api_call "$PHONE" records/modify "$(KIND=create update_body "new-$round" "" phone "$round" | sed 's/"recordChangeTag":"",//')" >"$TEST_TMP/phone-new" &
  phone_pid=$!
  wait "$mac_pid" "$phone_pid"
  mac_out=$(cat "$TEST_TMP/mac-new") phone_out=$(cat "$TEST_TMP/phone-new")
  case "$(item_codes "${mac_out% *}") $(item_codes "${phone_out% *}")" in
    "ok EXISTS") winner_out=${mac_out% *} loser_out=${phone_out% *} ;;
    "EXISTS ok") winner_out=${phone_out% *} loser_out=${mac_out% *} ;;
    *) fail "round $round: different concurrent creates: $mac_out / $phone_out" ;;
  esac
  expect_error_body EXISTS "$(record_items "$loser_out")"
  # docs/api.md promises serverRecord only with CONFLICT; if EXISTS carries one, it is the winner's.
  if [[ $loser_out == *'"serverRecord":'* ]]; then
    [ "$(record_tag "new-$round" "$loser_out")" = "$(record_tag "new-$round" "$winner_out")" ] || fail "round $round: EXISTS carries another record than the winner's: $loser_out"
  fi
done
ok "5 rounds: identical concurrent creates both succeed with one tag; different ones give one EXISTS"

note "a new user's first requests from 8 devices at once (the private database is created once)"
nimbus_admin user add bob >/dev/null
pids=()
for ((d = 1; d <= 8; d++)); do
  issue_token "BOB_$d" bob "device-$d"
done
for ((d = 1; d <= 8; d++)); do
  token_var=BOB_$d
  api_call "${!token_var}" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"first-$d\",\"recordType\":\"Hello\",\"fields\":{\"device\":{\"value\":$d}}}}]}" >"$TEST_TMP/first-$d" &
  pids+=($!)
done
wait "${pids[@]}"
for ((d = 1; d <= 8; d++)); do
  out=$(cat "$TEST_TMP/first-$d")
  [ "${out##* }" = 200 ] && [ "$(item_codes "${out% *}")" = ok ] || fail "bob's device $d, first request: $out"
done
api_ok "$BOB_1" records/query '{"query":{"recordType":"Hello"}}'
[ "$(record_summary | cut -d' ' -f1 | tr '\n' ' ')" = "first-1 first-2 first-3 first-4 first-5 first-6 first-7 first-8 " ] || fail "bob's records after concurrent first use: $(record_summary | tr '\n' ' ')"
api_ok "$BOB_1" zones/list
[ "$(contains "$HTTP_BODY" -a -o '"zoneName"' | wc -l)" = 1 ] || fail "bob has more than one _defaultZone: $HTTP_BODY"
ok "8 concurrent first requests of a new user all succeed into one database"

expect_no_server_errors
