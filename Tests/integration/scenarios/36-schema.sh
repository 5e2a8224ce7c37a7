#!/usr/bin/env bash
# Schema (issue 3): development learns types and fields just in time and then holds them; a
# failed save teaches nothing; production accepts only deployed types and fields until
# `nimbus schema deploy`; imported appendOnly types refuse every update form but allow create,
# the create retry and delete; `nimbus schema show` prints what was imported and re-imports.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token TOK alice mac
API_CONTAINER=com.example.SchemaTest
C=$API_CONTAINER

save() { # KIND NAME TYPE FIELDS [TAG]
  local tag=""
  [ -n "${5:-}" ] && tag=",\"recordChangeTag\":\"$5\""
  api_ok "$TOK" records/modify "{\"operations\":[{\"operationType\":\"$1\",\"record\":{\"recordName\":\"$2\",\"recordType\":\"$3\"$tag,\"fields\":$4}}]}"
}

note "development: the first save defines the type and its fields"
save create w1 Widget '{"name":{"value":"first"},"count":{"value":3},"ratio":{"value":0.5},"big":{"value":1e3},"tags":{"value":["a","b"]},"nums":{"value":[1,2.5]},"ints":{"value":[1,2]},"when":{"value":1795000000000,"type":"TIMESTAMP"},"blob":{"value":"AAEC","type":"BYTES"},"link":{"value":{"recordName":"w0","action":"NONE"},"type":"REFERENCE"}}'
expect_item_codes ok "first Widget"
shown=$(nimbus_admin schema show "$C") || exit 1
for pair in name:STRING count:INT64 ratio:DOUBLE big:DOUBLE tags:STRING_LIST nums:DOUBLE_LIST ints:INT64_LIST when:TIMESTAMP blob:BYTES link:REFERENCE; do
  contains "$shown" -q "\"${pair%%:*}\":\"${pair#*:}\"" || fail "schema show lacks ${pair%%:*} ${pair#*:}: $shown"
done
[[ $(field_value w1 count) == 3 ]] && [[ $(field_value w1 ratio) == 0.5 ]] || fail "the answer lost values: $HTTP_BODY"
contains "$HTTP_BODY" -a -q '"nums":{"value":\[1\(\.0\)\?,2.5\],"type":"DOUBLE_LIST"}' || fail "nums is not a DOUBLE_LIST: $HTTP_BODY"
ok "untyped values typed from JSON (STRING, INT64, DOUBLE, STRING_LIST, DOUBLE_LIST, INT64_LIST), declared ones as declared; schema show lists them"

note "development: a later save with another type is refused, the schema's type applies"
for fields in '{"count":{"value":"three"}}' '{"count":{"value":2.5}}' '{"count":{"value":3,"type":"DOUBLE"}}' '{"name":{"value":5}}' \
              '{"tags":{"value":"a"}}' '{"tags":{"value":[1]}}' '{"when":{"value":"noon"}}' '{"link":{"value":"w0"}}'; do
  save forceUpdate w2 Widget "$fields"
  expect_item_codes BAD_REQUEST "Widget with $fields"
  expect_error_body BAD_REQUEST "$(record_items)"
done
save forceUpdate w2 Widget '{"count":{"value":"7"}}'
reason=$(json_field reason "$(record_items)")
for word in w2 count INT64 string; do [[ $reason == *"$word"* ]] || fail "reason '$reason' does not name $word"; done
save forceUpdate w2 Widget '{"count":{"value":7},"ratio":{"value":2},"when":{"value":1795000000001}}'
expect_item_codes ok "values of the schema's types sent without type"
contains "$HTTP_BODY" -a -q '"ratio":{"value":2\(\.0\)\?,"type":"DOUBLE"}' || fail "an integer for a DOUBLE field is not a DOUBLE: $HTTP_BODY"
contains "$HTTP_BODY" -a -q '"when":{"value":1795000000001,"type":"TIMESTAMP"}' || fail "an integer for a TIMESTAMP field is not a TIMESTAMP: $HTTP_BODY"
ok "other types for known fields: BAD_REQUEST items naming record, field and types; known types apply to untyped values"

note "a refused save teaches the schema nothing"
api_ok "$TOK" records/modify '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"w3","recordType":"Widget","fields":{"learned":{"value":"text"},"count":{"value":"bad"}}}}]}'
expect_item_codes BAD_REQUEST "a save with one bad field"
api_ok "$TOK" records/modify '{"atomic":true,"operations":[{"operationType":"create","record":{"recordName":"g1","recordType":"Gizmo","fields":{"size":{"value":"large"}}}},{"operationType":"update","record":{"recordName":"w1","recordChangeTag":"zzzz","fields":{"count":{"value":1}}}}]}'
expect_item_codes "ATOMIC_ERROR CONFLICT" "a failed atomic request"
shown=$(nimbus_admin schema show "$C") || exit 1
contains "$shown" -q '"learned"' && fail "a refused save defined field 'learned': $shown"
contains "$shown" -q '"Gizmo"' && fail "a failed atomic request defined type Gizmo: $shown"
save forceUpdate w3 Widget '{"learned":{"value":42}}'
expect_item_codes ok "'learned' as INT64 after the refused STRING"
save create g1 Gizmo '{"size":{"value":3}}'
expect_item_codes ok "Gizmo.size as INT64 after the failed atomic request"
ok "fields and types of refused or rolled-back saves are not learned"

note "development: concurrent first saves of one field with two types: one wins, in every zone"
api_ok "$TOK" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Left"}}},{"operationType":"create","zone":{"zoneID":{"zoneName":"Right"}}}]}'
for ((round = 1; round <= 8; round++)); do
  api_call "$TOK" records/modify '{"zoneID":{"zoneName":"Left"},"operations":[{"operationType":"create","record":{"recordName":"l'$round'","recordType":"Race'$((round % 2))'","fields":{"f'$round'":{"value":"text"}}}}]}' >"$TEST_TMP/left" &
  left_pid=$!
  api_call "$TOK" records/modify '{"zoneID":{"zoneName":"Right"},"operations":[{"operationType":"create","record":{"recordName":"r'$round'","recordType":"Race'$((round % 2))'","fields":{"f'$round'":{"value":7}}}}]}' >"$TEST_TMP/right" &
  right_pid=$!
  wait "$left_pid" "$right_pid"
  left=$(cat "$TEST_TMP/left") right=$(cat "$TEST_TMP/right")
  [ "${left##* }" = 200 ] && [ "${right##* }" = 200 ] || fail "round $round: concurrent schema definitions answered ${left##* } / ${right##* }: $left / $right"
  case "$(item_codes "${left% *}") $(item_codes "${right% *}")" in
    "ok BAD_REQUEST") want=STRING ;;
    "BAD_REQUEST ok") want=INT64 ;;
    *) fail "round $round: expected one definition to win: $left / $right" ;;
  esac
  nimbus_admin schema show "$C" | grep -q "\"f$round\":\"$want\"" || fail "round $round: the schema does not hold f$round as the winner's $want"
done
ok "8 rounds of racing definitions across two zones: one type wins, the other save is a BAD_REQUEST item, the schema holds the winner's"

note "production: only deployed types and fields"
API_ENV=production
save create p1 Widget '{"name":{"value":"prod"}}'
expect_item_codes BAD_REQUEST "an undeployed type in production"
api "$TOK" records/query '{"query":{"recordType":"Widget"}}'
expect_api_error 400 BAD_REQUEST "query of an undeployed type in production"
deployed=$(nimbus_admin schema deploy "$C") || exit 1
note "$deployed"
save create p1 Widget '{"name":{"value":"prod"},"count":{"value":1},"ints":{"value":[4]}}'
expect_item_codes ok "a deployed type in production"
save forceUpdate p2 Widget '{"name":{"value":"x"},"extra":{"value":"new"}}'
expect_item_codes BAD_REQUEST "an undeployed field in production"
save forceUpdate p3 Doohickey '{"name":{"value":"x"}}'
expect_item_codes BAD_REQUEST "an undeployed type in production after deploy"
save forceUpdate p4 Widget '{"count":{"value":"x"}}'
expect_item_codes BAD_REQUEST "a deployed field with a wrong value in production"
api_ok "$TOK" records/query '{"query":{"recordType":"Widget"}}'
[ "$(record_summary | cut -d' ' -f1 | tr '\n' ' ')" = "p1 " ] || fail "production Widgets: $(record_summary | tr '\n' ' ') (development's must not show)"
API_ENV=development
save forceUpdate w4 Widget '{"extra":{"value":"dev"}}'
expect_item_codes ok "a new field in development"
API_ENV=production
save forceUpdate p2 Widget '{"extra":{"value":"new"}}'
expect_item_codes BAD_REQUEST "a field added in development but not deployed"
nimbus_admin schema deploy "$C" >/dev/null
save forceUpdate p2 Widget '{"extra":{"value":"new"}}'
expect_item_codes ok "the field after a second deploy"
API_ENV=development
ok "production refuses undeployed types and fields (and queries of undeployed types) until schema deploy; data apart from development"

note "appendOnly BlockedAppEvent (applocker.json imported)"
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
API_CONTAINER=iCloud.com.mirxa.AppLocker
for env in development production; do
  API_ENV=$env
  ts=$(( $(now_ms) - 60000 ))
  event="{\"appName\":{\"value\":\"Safari\"},\"bundleID\":{\"value\":\"com.apple.Safari\"},\"deviceName\":{\"value\":\"mac\"},\"timestamp\":{\"value\":$ts}}"
  save create e1 BlockedAppEvent "$event"
  expect_item_codes ok "$env: create an event"
  tag=$(record_tag e1)
  save create e1 BlockedAppEvent "$event"
  expect_item_codes ok "$env: the create retry of an event"
  [ "$(record_tag e1)" = "$tag" ] || fail "$env: the create retry changed the tag"
  api_ok "$TOK" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
  feed_token=$(json_last_field syncToken)
  save create e1 BlockedAppEvent "$event"
  expect_item_codes ok "$env: a second create retry"
  api_ok "$TOK" records/changes "{\"zoneID\":{\"zoneName\":\"_defaultZone\"},\"syncToken\":\"$feed_token\"}"
  [ -z "$(record_summary)" ] || fail "$env: a create retry added $(record_summary | tr '\n' ' ') to the change feed"
  for kind in update replace; do
    save "$kind" e1 BlockedAppEvent '{"appName":{"value":"Mail"}}' "$tag"
    expect_item_codes ACCESS_DENIED "$env: $kind of an event"
    expect_error_body ACCESS_DENIED "$(record_items)"
  done
  for kind in forceUpdate forceReplace; do
    save "$kind" e1 BlockedAppEvent '{"appName":{"value":"Mail"}}'
    expect_item_codes ACCESS_DENIED "$env: $kind of an event"
  done
  save create e1 BlockedAppEvent '{"appName":{"value":"Mail"}}'
  expect_item_codes EXISTS "$env: create of an existing event with other content"
  save forceUpdate e2 BlockedAppEvent "$event"
  expect_item_codes ok "$env: forceUpdate creating a missing event"
  save update e3 BlockedAppEvent "$event" 1
  expect_item_codes NOT_FOUND "$env: update of a missing event"
  api_ok "$TOK" records/lookup '{"records":[{"recordName":"e1"}]}'
  [ "$(record_tag e1)" = "$tag" ] && [ "$(field_value e1 appName)" = '"Safari"' ] || fail "$env: a refused update changed the event: $HTTP_BODY"
  api_ok "$TOK" records/modify '{"operations":[{"operationType":"delete","record":{"recordName":"e1","recordChangeTag":"'"$tag"'"}},{"operationType":"forceDelete","record":{"recordName":"e2"}}]}'
  expect_item_codes "ok ok" "$env: delete and forceDelete of events"
  save create e4 BlockedAppEvent '{"appName":{"value":7}}'
  expect_item_codes BAD_REQUEST "$env: an imported STRING field given a number"
  save create e5 BlockedAppEvent '{"appName":{"value":"x"},"timestamp":{"value":"yesterday"}}'
  reason=$(json_field reason "$(record_items)")
  for word in e5 timestamp TIMESTAMP string; do [[ $reason == *"$word"* ]] || fail "$env: reason '$reason' does not name $word"; done
  # LockedAppList is not append-only; "value": null removes a field.
  save forceUpdate locked-mac LockedAppList '{"deviceName":{"value":"mac"}}'
  save forceUpdate locked-mac LockedAppList '{"updatedAt":{"value":1}}'
  expect_item_codes ok "$env: LockedAppList updates"
  [ "$(field_value locked-mac deviceName)" = '"mac"' ] || fail "$env: forceUpdate dropped a field it did not send: $HTTP_BODY"
  save forceUpdate locked-mac LockedAppList '{"deviceName":{"value":null}}'
  expect_item_codes ok "$env: removing a field"
  ! contains "$HTTP_BODY" -a -q '"deviceName"' || fail "$env: value null did not remove deviceName: $HTTP_BODY"
  [ "$(field_value locked-mac updatedAt)" = 1 ] || fail "$env: removing deviceName lost updatedAt: $HTTP_BODY"
done
API_ENV=development
ok "BlockedAppEvent in both environments: create, retry (same tag, nothing in the feed), forceUpdate of a missing one and delete allowed; update, replace, forceUpdate, forceReplace ACCESS_DENIED"

note "schema show prints the imported schema; it re-imports; a conflicting import is refused"
shown=$(nimbus_admin schema show iCloud.com.mirxa.AppLocker) || exit 1
for part in '"container":"iCloud.com.mirxa.AppLocker"' '"BlockedAppEvent":{"appendOnly":true,"fields":{"appName":"STRING","bundleID":"STRING","deviceName":"STRING","timestamp":"TIMESTAMP"},"retention":{"days":30,"field":"timestamp"}}' \
            '"photoAsset":"ASSETID"' '"LockedAppList":{"fields":{"apps":"ASSETID","deviceName":"STRING","updatedAt":"TIMESTAMP"}}' '"retention":{"days":7,"field":"timestamp"}'; do
  contains "$shown" -q -F "$part" || fail "schema show lacks $part: $shown"
done
production=$(nimbus_admin schema show iCloud.com.mirxa.AppLocker --environment production) || exit 1
[ "$production" = "$shown" ] || fail "import without --environment did not load production the same: $production"
printf '%s\n' "$shown" >"$TEST_TMP/shown.json"
nimbus_admin schema import "$TEST_TMP/shown.json" >/dev/null
[ "$(nimbus_admin schema show iCloud.com.mirxa.AppLocker)" = "$shown" ] || fail "re-importing schema show's output changed the schema"
sed 's/"appName":"STRING"/"appName":"INT64"/' "$TEST_TMP/shown.json" >"$TEST_TMP/conflict.json"
if "$NIMBUS_BIN" schema import "$TEST_TMP/conflict.json" --database-url "$NIMBUS_DB_URL" >"$TEST_TMP/conflict.out" 2>&1; then
  fail "importing appName as INT64 over STRING succeeded"
fi
grep -q appName "$TEST_TMP/conflict.out" || fail "the refused import does not name the field: $(cat "$TEST_TMP/conflict.out")"
[ "$(nimbus_admin schema show iCloud.com.mirxa.AppLocker)" = "$shown" ] || fail "a refused import changed the schema"
nimbus_admin schema import "$REPO_DIR/deploy/schemas/maccy.json" --environment production >/dev/null
contains "$(nimbus_admin schema show iCloud.org.p0deje.Maccy --environment production)" -q '"HistoryItemContent"' || fail "import --environment production did not load production"
contains "$(nimbus_admin schema show iCloud.org.p0deje.Maccy)" -q '"HistoryItem' && fail "import --environment production also loaded development"
ok "schema show: types, fields, retention and appendOnly as imported, same in both environments; it re-imports unchanged; a type change is refused; --environment loads one"

expect_no_server_errors
