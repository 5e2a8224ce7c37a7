#!/usr/bin/env bash
# Assets in the apps' flows (issue 5), on the production schemas of deploy/schemas:
# - AppLocker: the Mac uploads an encrypted intruder photo (an .aplkimg: magic, nonce, AES-GCM
#   ciphertext and tag; random bytes stand in for the ciphertext), saves a FailedAuthEvent with
#   it; the phone finds the event by records/query and by records/changes and downloads
#   byte-identical data. Another user cannot.
# - AppLocker: LockedAppList.apps (a JSON list) is replaced by a new upload (forceReplace); the
#   phone's records/changes brings the new list; only the new asset stays referenced.
# - Maccy: a large HistoryItemContent value as an asset; clearing the history (DELETE_SELF
#   cascade) releases the asset's reference.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
issue_token MAC alice mac-mini
issue_token PHONE alice iphone
issue_token BOB bob bob-mac
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
nimbus_admin schema import "$REPO_DIR/deploy/schemas/maccy.json" >/dev/null
API_ENV=production
API_CONTAINER=iCloud.com.mirxa.AppLocker

# references_of NAME: "base64-sha256/size" of each asset_references row of record NAME, sorted.
references_of() {
  psql_db "SELECT encode(sha256, 'base64') || '/' || size FROM asset_references WHERE record_name = '$1' ORDER BY 1"
}

api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
phone_token=$(json_last_field syncToken) || fail "records/changes without a syncToken: $HTTP_BODY"

# MARK: FailedAuthEvent with an encrypted photo

note "the Mac: an intruder photo, encrypted (.aplkimg), uploaded and saved with a FailedAuthEvent"
photo=$TEST_TMP/intruder.aplkimg
{
  printf 'APLKIMG1'
  head -c 12 /dev/urandom     # AES-GCM nonce
  head -c 183517 /dev/urandom # ciphertext of the JPEG
  head -c 16 /dev/urandom     # tag
} >"$photo"
event=fae-$(now_ms)
api_ok "$MAC" assets/upload "{\"tokens\":[{\"recordType\":\"FailedAuthEvent\",\"fieldName\":\"photoAsset\",\"recordName\":\"$event\"}]}"
contains "$HTTP_BODY" -a -q "^{\"tokens\":\\[{\"recordName\":\"$event\",\"fieldName\":\"photoAsset\",\"url\":\"$NIMBUS_URL/assets/1/upload/[^\"]*\"}\\]}$" \
  || fail "assets/upload answer: $HTTP_BODY"
asset_post "$MAC" "$(json_field url)" "$photo" length
expect_status 200 "photo upload"
parse_upload
[ "$UP_CHECKSUM" = "$(b64_sha256 "$photo")" ] && [ "$UP_SIZE" = "$(file_size "$photo")" ] || fail "photo upload answered $HTTP_BODY"
photo_checksum=$UP_CHECKSUM
when=$(now_ms)
create="{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"$event\",\"recordType\":\"FailedAuthEvent\",\"fields\":{
  \"appName\":{\"value\":\"Safari\"},\"bundleID\":{\"value\":\"com.apple.Safari\"},\"deviceName\":{\"value\":\"mac-mini\"},
  \"timestamp\":{\"value\":$when,\"type\":\"TIMESTAMP\"},\"photoAsset\":$UP_FIELD}}}]}"
api_ok "$MAC" records/modify "$create"
expect_item_codes ok "FailedAuthEvent create"
event_tag=$(record_tag "$event")
api_ok "$MAC" records/modify "$create"
expect_item_codes ok "the same create again (a retry)"
[ "$(record_tag "$event")" = "$event_tag" ] || fail "the retried create changed the tag from $event_tag to $(record_tag "$event")"
ok "FailedAuthEvent $event saved with its photo; the retried create is idempotent (tag $event_tag)"

note "the phone finds the event and downloads the photo"
api_ok "$PHONE" records/query '{"query":{"recordType":"FailedAuthEvent","sortBy":[{"fieldName":"timestamp","ascending":false}]},"resultsLimit":10}'
[ "$(record_summary | head -n 1)" = "$event $event_tag" ] || fail "the phone's query: $(record_summary | tr '\n' ' ')"
[ "$(field_value "$event" appName)" = '"Safari"' ] || fail "appName: $(field_value "$event" appName)"
url=$(asset_member "$event" photoAsset downloadURL) || fail "the queried event has no photoAsset downloadURL: ${HTTP_BODY:0:500}"
[ "$(asset_member "$event" photoAsset fileChecksum)" = "$photo_checksum" ] || fail "the queried event's photo checksum differs"
asset_get "$PHONE" "$url" "$TEST_TMP/photo-phone"
expect_status 200 "the phone's photo download"
expect_same_file "$photo" "$TEST_TMP/photo-phone" "the phone's photo download"
expect_header ETag "\"$photo_checksum\""
head -c 8 "$TEST_TMP/photo-phone" | grep -q '^APLKIMG1$' || fail "the downloaded photo lost its .aplkimg magic"
ok "records/query: the phone found $event and downloaded the $(file_size "$photo")-byte photo byte-identical"

api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"_defaultZone\"},\"syncToken\":\"$phone_token\"}"
phone_token=$(json_last_field syncToken) || fail "no syncToken in ${HTTP_BODY: -300}"
[ "$(record_summary | tr '\n' ' ')" = "$event $event_tag " ] || fail "the phone's changes: $(record_summary | tr '\n' ' ')"
url2=$(asset_member "$event" photoAsset downloadURL) || fail "the event in records/changes has no downloadURL"
asset_get "$PHONE" "$url2" "$TEST_TMP/photo-phone2"
expect_status 200 "download through the changes' URL"
expect_same_file "$photo" "$TEST_TMP/photo-phone2" "download through the changes' URL"
ok "records/changes: the phone got the event and the same bytes"

asset_get "$BOB" "$url" "$TEST_TMP/photo-bob"
expect_api_error 404 NOT_FOUND "bob downloading alice's photo"
api_ok "$BOB" records/query '{"query":{"recordType":"FailedAuthEvent"}}'
[ -z "$(record_summary)" ] || fail "bob's query found $(record_summary | tr '\n' ' ')"
ok "bob neither finds the event nor downloads the photo"

# MARK: LockedAppList with a JSON list asset, replaced

note "LockedAppList locked-mac-mini: apps is a JSON list uploaded as an asset"
printf '["com.apple.Safari","com.tinyspeck.slackmacgap","org.whispersystems.signal-desktop"]' >"$TEST_TMP/apps-v1.json"
asset_upload_url "$MAC" LockedAppList apps locked-mac-mini
asset_post "$MAC" "$ASSET_URL" "$TEST_TMP/apps-v1.json" chunked
expect_status 200 "apps v1 upload"
parse_upload
v1=$UP_CHECKSUM/$UP_SIZE
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"forceReplace\",\"record\":{\"recordName\":\"locked-mac-mini\",\"recordType\":\"LockedAppList\",\"fields\":{
  \"deviceName\":{\"value\":\"mac-mini\"},\"updatedAt\":{\"value\":$(now_ms),\"type\":\"TIMESTAMP\"},\"apps\":$UP_FIELD}}}]}"
expect_item_codes ok "LockedAppList v1"
api_ok "$PHONE" records/lookup '{"records":[{"recordName":"locked-mac-mini"}]}'
v1_url=$(asset_member locked-mac-mini apps downloadURL) || fail "locked-mac-mini has no apps downloadURL"
asset_get "$PHONE" "$v1_url" "$TEST_TMP/apps-phone-v1"
expect_status 200 "apps v1 download"
expect_same_file "$TEST_TMP/apps-v1.json" "$TEST_TMP/apps-phone-v1" "apps v1 on the phone"
[ "$(references_of locked-mac-mini)" = "$v1" ] || fail "references of locked-mac-mini: $(references_of locked-mac-mini), want $v1"
api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"_defaultZone\"},\"syncToken\":\"$phone_token\"}"
phone_token=$(json_last_field syncToken) || fail "no syncToken in ${HTTP_BODY: -300}"
ok "the phone read the v1 list"

note "the Mac locks another app: a new upload replaces the list (forceReplace)"
printf '["com.apple.Safari","com.tinyspeck.slackmacgap","org.whispersystems.signal-desktop","com.apple.Terminal"]' >"$TEST_TMP/apps-v2.json"
asset_upload_url "$MAC" LockedAppList apps locked-mac-mini
asset_post "$MAC" "$ASSET_URL" "$TEST_TMP/apps-v2.json" length
expect_status 200 "apps v2 upload"
parse_upload
v2=$UP_CHECKSUM/$UP_SIZE
[ "$v1" != "$v2" ] || fail "v1 and v2 lists have the same checksum"
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"forceReplace\",\"record\":{\"recordName\":\"locked-mac-mini\",\"recordType\":\"LockedAppList\",\"fields\":{
  \"deviceName\":{\"value\":\"mac-mini\"},\"updatedAt\":{\"value\":$(now_ms),\"type\":\"TIMESTAMP\"},\"apps\":$UP_FIELD}}}]}"
expect_item_codes ok "LockedAppList v2"
list_tag=$(record_tag locked-mac-mini)
api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"_defaultZone\"},\"syncToken\":\"$phone_token\"}"
[ "$(record_summary | tr '\n' ' ')" = "locked-mac-mini $list_tag " ] || fail "the phone's changes after v2: $(record_summary | tr '\n' ' ')"
[ "$(asset_member locked-mac-mini apps fileChecksum)/$(asset_member locked-mac-mini apps size)" = "$v2" ] || fail "the changed list does not point at v2"
asset_get "$PHONE" "$(asset_member locked-mac-mini apps downloadURL)" "$TEST_TMP/apps-phone-v2"
expect_status 200 "apps v2 download"
expect_same_file "$TEST_TMP/apps-v2.json" "$TEST_TMP/apps-phone-v2" "apps v2 on the phone"
[ "$(references_of locked-mac-mini)" = "$v2" ] || fail "after the replace, locked-mac-mini references $(references_of locked-mac-mini | tr '\n' ' '), want only $v2"
ok "the phone's changes bring the v2 list (new checksum and URL, byte-identical); only v2 stays referenced"

unreferenced=$(psql_db "SELECT encode(a.sha256, 'base64') || '/' || a.size FROM assets a WHERE a.complete
                        AND NOT EXISTS (SELECT 1 FROM asset_references r WHERE r.database_id = a.database_id AND r.sha256 = a.sha256 AND r.size = a.size)")
[ "$unreferenced" = "$v1" ] || fail "unreferenced assets: '$(tr '\n' ' ' <<<"$unreferenced")', want only the v1 list $v1"
ok "the replaced v1 list is the only unreferenced asset (kept for the grace period)"

# MARK: Maccy: a large clipboard value as an asset, released by the cascade

note "Maccy: a 400 KB clipboard value as HistoryItemContent.asset, then the history is cleared"
API_CONTAINER=iCloud.org.p0deje.Maccy
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"History"}}}]}'
random_file "$TEST_TMP/clip" 400000
api_ok "$MAC" assets/upload '{"zoneID":{"zoneName":"History"},"tokens":[{"recordType":"HistoryItemContent","fieldName":"asset","recordName":"c1"}]}'
asset_post "$MAC" "$(json_field url)" "$TEST_TMP/clip" chunked
expect_status 200 "clipboard upload"
parse_upload
clip=$UP_CHECKSUM/$UP_SIZE
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"History\"},\"operations\":[
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"h1\",\"recordType\":\"HistoryItem\",\"fields\":{\"application\":{\"value\":\"com.apple.Preview\"},\"numberOfCopies\":{\"value\":1}}}},
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"c1\",\"recordType\":\"HistoryItemContent\",\"fields\":{\"type\":{\"value\":\"public.tiff\"},\"asset\":$UP_FIELD,
    \"item\":{\"value\":{\"recordName\":\"h1\",\"action\":\"DELETE_SELF\"},\"type\":\"REFERENCE\"}}}}]}"
expect_item_codes "ok ok" "Maccy history with an asset"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"History"}}'
asset_get "$PHONE" "$(asset_member c1 asset downloadURL)" "$TEST_TMP/clip-phone"
expect_status 200 "clipboard download"
expect_same_file "$TEST_TMP/clip" "$TEST_TMP/clip-phone" "clipboard on the phone"
[ "$(references_of c1)" = "$clip" ] || fail "references of c1: $(references_of c1)"
api_ok "$MAC" records/modify '{"zoneID":{"zoneName":"History"},"operations":[{"operationType":"forceDelete","record":{"recordName":"h1"}}]}'
expect_item_codes ok "clearing the history"
api_ok "$MAC" records/lookup '{"zoneID":{"zoneName":"History"},"records":[{"recordName":"c1"}]}'
expect_item_codes NOT_FOUND "c1 after its item was deleted"
[ -z "$(references_of c1)" ] || fail "c1 was deleted by the DELETE_SELF cascade but still references $(references_of c1)"
ok "the clipboard asset round-trips; deleting its HistoryItem cascades to the content and releases the reference"

note "deleting the FailedAuthEvent releases the photo"
API_CONTAINER=iCloud.com.mirxa.AppLocker
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"delete\",\"record\":{\"recordName\":\"$event\",\"recordChangeTag\":\"$event_tag\"}}]}"
expect_item_codes ok "deleting the event"
[ -z "$(references_of "$event")" ] || fail "the deleted event still references $(references_of "$event")"
ok "a deleted record references no asset"

# MARK: collection of unreferenced assets

note "collection: nimbus prune with a grace period, then the server's pruning job"
# asset_rows: "base64-sha256/size" of every assets row, sorted.
asset_rows() { psql_db "SELECT encode(sha256, 'base64') || '/' || size FROM assets ORDER BY 1"; }
expected_before=$(printf '%s\n' "$v1" "$v2" "$clip" "$photo_checksum/$(file_size "$photo")" | sort)
[ "$(asset_rows)" = "$expected_before" ] || fail "assets before collection: $(asset_rows | tr '\n' ' ')"
nimbus_admin prune --asset-grace 1h >/dev/null
[ "$(asset_rows)" = "$expected_before" ] || fail "prune --asset-grace 1h removed assets released seconds ago: $(asset_rows | tr '\n' ' ')"
nimbus_admin prune --asset-grace 0s --dry-run >/dev/null
[ "$(asset_rows)" = "$expected_before" ] || fail "prune --dry-run removed assets"
nimbus_admin prune --asset-grace 0s >/dev/null
[ "$(asset_rows)" = "$v2" ] || fail "after prune --asset-grace 0s the assets are '$(asset_rows | tr '\n' ' ')', want only the referenced v2 list $v2"
[ "$(psql_db "SELECT count(*) FROM asset_chunks")" = 1 ] || fail "after collection asset_chunks has $(psql_db "SELECT count(*) FROM asset_chunks") rows, want the v2 list's 1"
asset_get "$PHONE" "$url" "$TEST_TMP/photo-gone"
expect_api_error 404 NOT_FOUND "the collected photo's downloadURL"
asset_get "$PHONE" "$v1_url" "$TEST_TMP/v1-gone"
expect_api_error 404 NOT_FOUND "the collected v1 list's downloadURL"
api_ok "$PHONE" records/lookup '{"records":[{"recordName":"locked-mac-mini"}]}'
asset_get "$PHONE" "$(asset_member locked-mac-mini apps downloadURL)" "$TEST_TMP/apps-after-prune"
expect_status 200 "the referenced list after collection"
expect_same_file "$TEST_TMP/apps-v2.json" "$TEST_TMP/apps-after-prune" "the referenced list after collection"
ok "nimbus prune: nothing inside the grace period (1h) or with --dry-run; with 0s the three released assets and their chunks go, the referenced list stays"

# A successful upload of bytes that are already stored (deduplicated) must give the client the
# grace period to save its record, like a new upload.
random_file "$TEST_TMP/again" 5000
upload_asset "$MAC" "$TEST_TMP/again" length LockedAppList apps
sleep 3
upload_asset "$PHONE" "$TEST_TMP/again" length LockedAppList apps
again_field=$UP_FIELD
nimbus_admin prune --asset-grace 2s >/dev/null
api_ok "$PHONE" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"again\",\"recordType\":\"LockedAppList\",\"fields\":{\"apps\":$again_field}}}]}"
if [ "$(item_codes)" = ok ]; then
  ok "bytes re-uploaded (deduplicated) after their grace period survive a prune right after the upload"
else
  defer_fail "bytes uploaded 3 s earlier and uploaded again (deduplicated) were collected by 'prune --asset-grace 2s' run right after the second upload; the save with its fresh receipt: $(item_codes) $(json_field reason)"
fi

note "the server's own pruning job (--prune-interval 1s --asset-grace 2s) collects an orphan upload"
random_file "$TEST_TMP/orphan" 3000
upload_asset "$MAC" "$TEST_TMP/orphan" length LockedAppList apps
orphan=$UP_CHECKSUM/$UP_SIZE
expect_no_server_errors
stop_nimbus >/dev/null
start_nimbus --database-url "$NIMBUS_DB_URL" --prune-interval 1s --asset-grace 2s
deadline=$(( $(now_ms) + 15000 ))
while asset_rows | grep -q -x -F "$orphan"; do
  [ "$(now_ms)" -gt "$deadline" ] && fail "the pruning job did not collect the orphan upload within 15 s"
  sleep 0.2
done
asset_rows | grep -q -x -F "$v2" || fail "the pruning job collected the referenced list"
ok "the pruning job collected the orphan upload after its grace period and kept the referenced list"

healthy "after the pruning job"
grep -a -q 'pruned' "$NIMBUS_LOG" || fail "the pruning job logged no 'pruned' line"
! grep -a -i -q 'internal error\|pruning failed' "$NIMBUS_LOG" || fail "server log: $(grep -a -i 'internal error\|pruning failed' "$NIMBUS_LOG" | head -n 2)"
finish_scenario
