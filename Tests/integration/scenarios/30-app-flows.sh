#!/usr/bin/env bash
# The apps' flows (issue 3): AppLocker's Mac publishes BlockedAppEvents and the phone fetches the
# latest 100 by timestamp; LockedAppList is fetched-or-created by name locked-<device> and updated
# with its change tag; Maccy's HistoryItems with DELETE_SELF contents go from one device to the
# other through records/changes, and clearing the history reaches the other device as tombstones.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac-mini
issue_token PHONE alice iphone
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
nimbus_admin schema import "$REPO_DIR/deploy/schemas/maccy.json" >/dev/null

api_ok "$MAC" users/current
mac_user=$(json_field userRecordName) || fail "users/current without userRecordName: $HTTP_BODY"
api_ok "$PHONE" users/current
[ "$(json_field userRecordName)" = "$mac_user" ] || fail "two devices of alice answer different userRecordNames"
ok "users/current: both devices are $mac_user"

# MARK: AppLocker: BlockedAppEvent, latest 100 by timestamp

note "the Mac publishes 150 BlockedAppEvents"
API_CONTAINER=iCloud.com.mirxa.AppLocker
total=150
base=$(( $(now_ms) - 3600000 ))
# Event i has timestamp base + i s; its name is a permutation of i, so that name order and
# timestamp order differ.
event_name() { printf 'evt-%03d' $(( ($1 * 37) % total )); }
for batch in 0 1 2; do
  ops=""
  for ((i = batch * 50; i < batch * 50 + 50; i++)); do
    ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"$(event_name $i)\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"App $i\"},\"bundleID\":{\"value\":\"com.example.app$((i % 7))\"},\"deviceName\":{\"value\":\"mac-mini\"},\"timestamp\":{\"value\":$((base + i * 1000)),\"type\":\"TIMESTAMP\"}}}}"
  done
  api_ok "$MAC" records/modify "{\"operations\":[$ops]}"
  [ "$(item_codes | grep -c '^ok$')" = 50 ] || fail "batch $batch: not every create succeeded: ${HTTP_BODY:0:400}"
done
ok "150 events created in 3 requests"

latest_query='"query":{"recordType":"BlockedAppEvent","sortBy":[{"fieldName":"timestamp","ascending":false}]},"resultsLimit":100'
api_ok "$PHONE" records/query "{$latest_query}"
page1=$HTTP_BODY
names=$(record_summary "$page1" | cut -d' ' -f1)
[ "$(printf '%s\n' "$names" | grep -c .)" = 100 ] || fail "the phone got $(printf '%s\n' "$names" | grep -c .) events, not 100"
expected=$(for ((i = total - 1; i >= total - 100; i--)); do event_name $i; echo; done)
[ "$names" = "$expected" ] || fail "the latest 100 are not in timestamp-descending order: $(printf '%s' "$names" | head -5 | tr '\n' ' ')..."
timestamps=$(contains "$page1" -a -o '"timestamp":{"value":[0-9]*,"type":"TIMESTAMP"}' | grep -a -o '[0-9][0-9]*')
[ "$(sed -n 1p <<<"$timestamps")" = $((base + (total - 1) * 1000)) ] || fail "the first event is not the newest"
[ "$timestamps" = "$(printf '%s\n' "$timestamps" | sort -rn)" ] || fail "timestamps are not descending"
[ "$(field_value "$(event_name 149)" deviceName "$page1")" = '"mac-mini"' ] || fail "deviceName of the newest event is not mac-mini"
contains "$page1" -a -q '"created":{"timestamp":[0-9]*,"userRecordName":"'"$mac_user"'","deviceID":"mac-mini"}' \
  || fail "created does not name alice's mac-mini: ${page1:0:400}"
marker=$(json_last_field continuationMarker "$page1") || fail "100 of 150 events but no continuationMarker"
ok "the phone fetched the latest 100 events, newest first, with a continuationMarker"

note "between pages: one event older than all inserted (must come on page 2), one newer (must not), two deleted"
api_ok "$MAC" records/modify "{\"operations\":[
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"evt-late-old\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"Old\"},\"timestamp\":{\"value\":$((base - 5000))}}}},
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"evt-late-new\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"New\"},\"timestamp\":{\"value\":$((base + 500000))}}}}]}"
expect_item_codes "ok ok" "late events"
# Events are append-only, but deletable: one already on page 1 and one due on page 2.
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"forceDelete\",\"record\":{\"recordName\":\"$(event_name 120)\"}},{\"operationType\":\"forceDelete\",\"record\":{\"recordName\":\"$(event_name 10)\"}}]}"
expect_item_codes "ok ok" "deletes between pages"
api_ok "$PHONE" records/query "{$latest_query,\"continuationMarker\":\"$marker\"}"
names2=$(record_summary | cut -d' ' -f1)
expected2=$(for ((i = total - 101; i >= 0; i--)); do [ "$i" -ne 10 ] && { event_name $i; echo; }; done; echo evt-late-old)
[ "$names2" = "$expected2" ] || fail "page 2 is not the remaining 50 (+ the older late event): $(printf '%s' "$names2" | tr '\n' ' ' | head -c 300)"
json_last_field continuationMarker >/dev/null && fail "the last page carries a continuationMarker"
ok "page 2: the other events (less the one deleted meanwhile) and the older one inserted meanwhile, no repeat, no marker"

api_ok "$PHONE" records/query '{"query":{"recordType":"BlockedAppEvent","filterBy":[{"fieldName":"timestamp","comparator":"GREATER_THAN_OR_EQUALS","fieldValue":{"value":'$((base + 140000))',"type":"TIMESTAMP"}}],"sortBy":[{"fieldName":"timestamp","ascending":false}]}}'
[ "$(record_summary | cut -d' ' -f1 | tr '\n' ' ')" = "evt-late-new $(for i in 149 148 147 146 145 144 143 142 141 140; do printf '%s ' "$(event_name $i)"; done)" ] \
  || fail "filtered query (timestamp >= base+140s) answered $(record_summary | cut -d' ' -f1 | tr '\n' ' ')"
ok "filtered query: events since a timestamp, newest first"

# MARK: AppLocker: LockedAppList fetched-or-created by name

note "LockedAppList locked-iphone: lookup, create, update with its tag, stale tag"
api_ok "$PHONE" records/lookup '{"records":[{"recordName":"locked-iphone"}]}'
expect_item_codes NOT_FOUND "lookup of a list not yet created"
expect_error_body NOT_FOUND "$(record_items)"
t0=$(now_ms)
api_ok "$PHONE" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"locked-iphone","recordType":"LockedAppList","fields":{"deviceName":{"value":"iphone"},"updatedAt":{"value":'"$t0"'}}}}]}'
expect_item_codes ok "create locked-iphone"
tag1=$(record_tag locked-iphone)
[ -n "$tag1" ] || fail "create answered no recordChangeTag: $HTTP_BODY"
contains "$HTTP_BODY" -a -q '"modified":{"timestamp":[0-9]*,"userRecordName":"[^"]*","deviceID":"iphone"}' || fail "modified.deviceID is not iphone"

# The Mac has its own list.
api_ok "$MAC" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"locked-mac-mini","recordType":"LockedAppList","fields":{"deviceName":{"value":"mac-mini"},"updatedAt":{"value":'"$((t0 - 1000))"'}}}}]}'
expect_item_codes ok "create locked-mac-mini"

# Fetched next time instead of created.
api_ok "$PHONE" records/lookup '{"records":[{"recordName":"locked-iphone"}]}'
[ "$(record_tag locked-iphone)" = "$tag1" ] || fail "lookup answered tag $(record_tag locked-iphone), create gave $tag1"
api_ok "$PHONE" records/modify '{"operations":[{"operationType":"update","record":{"recordName":"locked-iphone","recordType":"LockedAppList","recordChangeTag":"'"$tag1"'","fields":{"updatedAt":{"value":'"$((t0 + 2000))"'}}}}]}'
expect_item_codes ok "update with the current tag"
tag2=$(record_tag locked-iphone)
[ -n "$tag2" ] && [ "$tag2" != "$tag1" ] || fail "update did not change the tag ($tag1 → $tag2)"
[ "$(tag_number "$tag2")" -gt "$(tag_number "$tag1")" ] || fail "the new tag $tag2 is not after $tag1"
[ "$(field_value locked-iphone deviceName)" = '"iphone"' ] || fail "update lost the field it did not send"
[ "$(field_value locked-iphone updatedAt)" = "$((t0 + 2000))" ] || fail "update did not set updatedAt"
ok "locked-iphone: NOT_FOUND → created ($tag1) → fetched → updated ($tag2), deviceName kept"

api_ok "$MAC" records/modify '{"operations":[{"operationType":"update","record":{"recordName":"locked-iphone","recordType":"LockedAppList","recordChangeTag":"'"$tag1"'","fields":{"updatedAt":{"value":1}}}}]}'
expect_item_codes CONFLICT "update with a stale tag"
item=$(record_items)
expect_error_body CONFLICT "$item"
contains "$item" -a -q '"serverRecord":{"recordName":"locked-iphone","recordType":"LockedAppList","recordChangeTag":"'"$tag2"'"' \
  || fail "CONFLICT does not carry the current record with tag $tag2: $item"
contains "$item" -a -q '"updatedAt":{"value":'"$((t0 + 2000))"',' || fail "serverRecord lacks the current updatedAt: $item"
api_ok "$PHONE" records/lookup '{"records":[{"recordName":"locked-iphone"}]}'
[ "$(record_tag locked-iphone)" = "$tag2" ] || fail "the stale update changed the record"
ok "stale tag: CONFLICT with serverRecord (tag $tag2), nothing written"

api_ok "$PHONE" records/query '{"query":{"recordType":"LockedAppList","sortBy":[{"fieldName":"updatedAt","ascending":false}]}}'
[ "$(record_summary | cut -d' ' -f1 | tr '\n' ' ')" = "locked-iphone locked-mac-mini " ] || fail "LockedAppList by updatedAt: $(record_summary | tr '\n' ' ')"
ok "LockedAppList by updatedAt descending: both devices' lists"

# apps is an ASSETID: a value without a receipt of this server is refused.
api_ok "$PHONE" records/modify '{"operations":[{"operationType":"update","record":{"recordName":"locked-iphone","recordType":"LockedAppList","recordChangeTag":"'"$tag2"'","fields":{"apps":{"value":{"fileChecksum":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","size":2,"receipt":"forged"}}}}}]}'
expect_item_codes BAD_REQUEST "ASSETID value without a valid receipt"
ok "apps ASSETID with a forged receipt: BAD_REQUEST item"

# MARK: Maccy: HistoryItem and its contents, cleared on one device, seen on the other

note "Maccy: history created on the Mac, read on the phone through records/changes"
API_CONTAINER=iCloud.org.p0deje.Maccy
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"History"}}}]}'
ops=""
now=$(now_ms)
for i in 1 2 3 4 5; do
  ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"h$i\",\"recordType\":\"HistoryItem\",\"fields\":{\"application\":{\"value\":\"com.apple.Safari\"},\"title\":{\"value\":\"$(printf 'sealed title %s' "$i" | base64)\",\"type\":\"ENCRYPTED_BYTES\"},\"firstCopiedAt\":{\"value\":$((now - i * 1000))},\"lastCopiedAt\":{\"value\":$((now - i * 1000))},\"numberOfCopies\":{\"value\":1}}}}"
  for part in a b; do
    ops+=",{\"operationType\":\"create\",\"record\":{\"recordName\":\"c$i-$part\",\"recordType\":\"HistoryItemContent\",\"fields\":{\"type\":{\"value\":\"public.utf8-plain-text\"},\"value\":{\"value\":\"$(printf 'copied text %s%s' "$i" "$part" | base64)\",\"type\":\"ENCRYPTED_BYTES\"},\"item\":{\"value\":{\"recordName\":\"h$i\",\"action\":\"DELETE_SELF\"}}}}}"
  done
done
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"History\"},\"operations\":[$ops]}"
[ "$(item_codes | grep -c '^ok$')" = 15 ] || fail "history creates failed: ${HTTP_BODY:0:500}"

api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"History"}}'
[ "$(json_last_field moreComing)" = false ] || fail "15 records and moreComing"
[ "$(record_summary | cut -d' ' -f1 | sort | tr '\n' ' ')" = "c1-a c1-b c2-a c2-b c3-a c3-b c4-a c4-b c5-a c5-b h1 h2 h3 h4 h5 " ] \
  || fail "the phone's first fetch: $(record_summary | tr '\n' ' ')"
contains "$HTTP_BODY" -a -q '"item":{"value":{"recordName":"h3","action":"DELETE_SELF"},"type":"REFERENCE"}' \
  || fail "c3 contents do not carry their REFERENCE: ${HTTP_BODY:0:600}"
# The shipped schema declares HistoryItemContent.value and HistoryItem.title encrypted: the
# devices send ciphertext (here stand-in bytes) and get it back as sent.
contains "$HTTP_BODY" -a -q "\"value\":{\"value\":\"$(printf 'copied text 2b' | base64)\",\"type\":\"ENCRYPTED_BYTES\"}" || fail "ENCRYPTED_BYTES value did not round-trip"
contains "$HTTP_BODY" -a -q "\"title\":{\"value\":\"$(printf 'sealed title 4' | base64)\",\"type\":\"ENCRYPTED_BYTES\"}" || fail "encrypted title did not round-trip"
phone_token=$(json_last_field syncToken)
ok "the phone received 5 items and 10 contents with their references and bytes"

note "the Mac copies h2 twice more: the phone sees h2 once, in its latest state"
api_ok "$MAC" records/lookup '{"zoneID":{"zoneName":"History"},"records":[{"recordName":"h2"}]}'
h2_tag=$(record_tag h2)
for copies in 2 3; do
  api_ok "$MAC" records/modify '{"zoneID":{"zoneName":"History"},"operations":[{"operationType":"update","record":{"recordName":"h2","recordType":"HistoryItem","recordChangeTag":"'"$h2_tag"'","fields":{"numberOfCopies":{"value":'"$copies"'},"lastCopiedAt":{"value":'"$(now_ms)"'}}}}]}'
  expect_item_codes ok "h2 copy $copies"
  h2_tag=$(record_tag h2)
done
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"History"},"syncToken":"'"$phone_token"'"}'
[ "$(record_summary | tr '\n' ' ')" = "h2 $h2_tag " ] || fail "changes after two updates of h2: $(record_summary | tr '\n' ' ') (want h2 $h2_tag)"
[ "$(field_value h2 numberOfCopies)" = 3 ] || fail "h2 numberOfCopies is $(field_value h2 numberOfCopies), want 3"
phone_token=$(json_last_field syncToken)
ok "one h2 with numberOfCopies 3 and tag $h2_tag"

note "the Mac clears the history: every HistoryItem deleted, contents cascade"
api_ok "$MAC" records/query '{"zoneID":{"zoneName":"History"},"query":{"recordType":"HistoryItem"}}'
ops=""
while read -r name tag; do
  ops+="${ops:+,}{\"operationType\":\"delete\",\"record\":{\"recordName\":\"$name\",\"recordChangeTag\":\"$tag\"}}"
done < <(record_summary)
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"History\"},\"operations\":[$ops]}"
[ "$(record_items | paste -sd, -)" = '{"recordName":"h1","deleted":true},{"recordName":"h2","deleted":true},{"recordName":"h3","deleted":true},{"recordName":"h4","deleted":true},{"recordName":"h5","deleted":true}' ] \
  || fail "clear history answered $HTTP_BODY"

api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"History"},"syncToken":"'"$phone_token"'"}'
[ "$(record_summary | sort | tr '\n' ' ')" = "c1-a - c1-b - c2-a - c2-b - c3-a - c3-b - c4-a - c4-b - c5-a - c5-b - h1 - h2 - h3 - h4 - h5 - " ] \
  || fail "the phone's changes after clearing: $(record_summary | tr '\n' ' ')"
contains "$HTTP_BODY" -a -q '{"recordName":"c4-b","recordType":"HistoryItemContent","deleted":true}' || fail "content tombstone shape: ${HTTP_BODY:0:300}"
contains "$HTTP_BODY" -a -q '{"recordName":"h4","recordType":"HistoryItem","deleted":true}' || fail "item tombstone shape: ${HTTP_BODY:0:300}"
phone_token=$(json_last_field syncToken)
api_ok "$PHONE" records/lookup '{"zoneID":{"zoneName":"History"},"records":[{"recordName":"h1"},{"recordName":"c1-a"}]}'
expect_item_codes "NOT_FOUND NOT_FOUND" "lookup after clearing"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"History"},"syncToken":"'"$phone_token"'"}'
[ -z "$(record_summary)" ] || fail "changes after catching up are not empty: $(record_summary | tr '\n' ' ')"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"History"}}'
[ -z "$(record_summary)" ] || fail "a fresh fetch after clearing returns $(record_summary | tr '\n' ' ') (tombstones must be omitted without a token)"
ok "the phone saw 15 tombstones (5 items, 10 cascaded contents); a fresh fetch is empty"

expect_no_server_errors
