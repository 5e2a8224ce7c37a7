#!/usr/bin/env bash
# Export and import (issue 16): a user's data in two containers (zones, records of every field
# type, DELETE_SELF references, assets, a subscription) exported from one server and imported
# into another, empty one: per record the fields and names are equal, asset bytes and checksums
# are equal, and a device syncing from no token gets the same set. Importing twice changes
# nothing. Bad input: an unknown user, a directory that is no export, a missing or altered asset
# file, a broken record line, a field type that conflicts with the schema, an invalid
# subscriptions.json, a duplicate record line, a record over maxRecordBytes: exit non-zero, a
# sentence naming the file or record, nothing imported (no record, no record type).
source "$(dirname "$0")/../lib.sh"

changes_url() { printf '%s/database/1/%s/development/private/records/changes' "$1" "$2"; }
sync_all() {  # sync_all BASE_URL TOKEN OUT_PREFIX: every zone of both containers, from no token
  local base=$1 token=$2 out=$3
  python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$base" iCloud.com.mirxa.AppLocker)" "$token" _defaultZone - "$out-applocker.json"
  python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$base" iCloud.com.mirxa.AppLocker)" "$token" Photos - "$out-photos.json"
  python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$base" iCloud.org.p0deje.Maccy)" "$token" History - "$out-history.json"
}

start_store_server
source_db=$NIMBUS_DB_URL source_url=$NIMBUS_URL
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac

note "alice's data: AppLocker events with photos in a zone, settings in the default zone, Maccy history"
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Photos"}}}]}'
ops=""
for i in 1 2 3; do
  random_file "$TEST_TMP/photo-$i" $((100000 * i + 7))
  upload_asset "$MAC" "$TEST_TMP/photo-$i" length FailedAuthEvent photoAsset
  ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"fail-$i\",\"recordType\":\"FailedAuthEvent\",\"fields\":{\"appName\":{\"value\":\"Safari $i\"},\"timestamp\":{\"value\":$(now_ms),\"type\":\"TIMESTAMP\"},\"photoAsset\":$UP_FIELD}}}"
done
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Photos\"},\"operations\":[$ops]}"
expect_item_codes "ok ok ok" "events with photos"
ops=""
for i in $(seq 1 450); do
  ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"setting-$i\",\"recordType\":\"Setting\",\"fields\":{\"name\":{\"value\":\"s$i\"},\"ratio\":{\"value\":$i.25,\"type\":\"DOUBLE\"},\"count\":{\"value\":$i,\"type\":\"INT64\"},\"tags\":{\"value\":[\"a\",\"b$i\"],\"type\":\"STRING_LIST\"},\"blob\":{\"value\":\"$(printf 'bytes %s' "$i" | base64)\",\"type\":\"BYTES\"}}}}"
  if [ $((i % 150)) = 0 ]; then api_ok "$MAC" records/modify "{\"operations\":[$ops]}"; ops=""; fi
done
api_ok "$MAC" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"sub-failed-auth","subscriptionType":"query","query":{"recordType":"FailedAuthEvent"},"firesOn":["create"],"notificationInfo":{"title":"Failed unlock attempt"}}}]}'
API_CONTAINER=iCloud.org.p0deje.Maccy
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"History"}}}]}'
ops=""
for i in 1 2 3; do
  # contents first in the request, so the export's name order puts referrers before targets
  ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"h$i\",\"recordType\":\"HistoryItem\",\"fields\":{\"title\":{\"value\":\"copied $i\"}}}}"
  ops+=",{\"operationType\":\"create\",\"record\":{\"recordName\":\"a-content-$i\",\"recordType\":\"HistoryItemContent\",\"fields\":{\"value\":{\"value\":\"$(printf 'text %s' "$i" | base64)\",\"type\":\"BYTES\"},\"item\":{\"value\":{\"recordName\":\"h$i\",\"action\":\"DELETE_SELF\"},\"type\":\"REFERENCE\"}}}}"
done
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"History\"},\"operations\":[$ops]}"
expect_item_codes "ok ok ok ok ok ok" "history"
API_CONTAINER=iCloud.com.mirxa.AppLocker
api_ok "$MAC" records/modify '{"operations":[{"operationType":"forceDelete","record":{"recordName":"setting-7"}}]}'
sync_all "$source_url" "$MAC" "$TEST_TMP/source"

note "nimbus export"
export_dir=$TEST_TMP/export
nimbus_admin export --user alice --output "$export_dir" >"$TEST_TMP/export.out" || exit 1
[ -f "$export_dir/nimbus-export.json" ] || fail "no manifest in $export_dir: $(ls -R "$export_dir" | head)"
[ "$(ls "$export_dir/assets" | wc -l)" = 3 ] || fail "the export has $(ls "$export_dir/assets" | wc -l) asset files, not 3"
for i in 1 2 3; do
  hex=$(sha256sum "$TEST_TMP/photo-$i" | cut -d' ' -f1)
  expect_same_file "$TEST_TMP/photo-$i" "$export_dir/assets/$hex" "exported asset $i"
done
lines=$(wc -l <"$export_dir/iCloud.com.mirxa.AppLocker/development/zones/_defaultZone.jsonl")
[ "$lines" = 449 ] || fail "the default zone's export holds $lines records, not the 449 live ones: $(ls -R "$export_dir" | head -20)"
grep -q sub-failed-auth "$export_dir/iCloud.com.mirxa.AppLocker/development/subscriptions.json" || fail "the subscription is not exported"
ok "export: $(tail -n 1 "$TEST_TMP/export.out"); asset files named by SHA-256 hold the bytes"

note "bad input: each refused with a sentence, nothing imported"
target_db=$(fresh_database)
"$NIMBUS_BIN" migrate --database-url "$target_db" >/dev/null 2>&1 || fail "migrate of the target failed"
"$NIMBUS_BIN" user add alice --database-url "$target_db" >/dev/null || fail "user add on the target failed"
record_rows() { "$NIMBUS_TEST_PG_BIN/psql" "$target_db" -X -q -At -c "SELECT (SELECT count(*) FROM records) + (SELECT count(*) FROM schema_record_types)" ; }
expect_import_refused() {
  local what=$1 pattern=$2; shift 2
  "$NIMBUS_BIN" import "$@" --database-url "$target_db" >"$TEST_TMP/refused.out" 2>&1 && fail "$what: exited 0: $(cat "$TEST_TMP/refused.out")"
  grep -q -- "$pattern" "$TEST_TMP/refused.out" || fail "$what: the message does not say '$pattern': $(cat "$TEST_TMP/refused.out")"
  [ "$(record_rows)" = 0 ] || fail "$what: $(record_rows) records and record types were imported"
  ok "$what: $(grep '^error:' "$TEST_TMP/refused.out")"
}
expect_import_refused "a user that does not exist" "nimbus user add bob" "$export_dir" --user bob
expect_import_refused "a directory that is no export" "no nimbus-export.json" "$TEST_TMP" --user alice
cp -r "$export_dir" "$TEST_TMP/no-asset"
rm "$TEST_TMP/no-asset/assets/$(sha256sum "$TEST_TMP/photo-2" | cut -d' ' -f1)"
expect_import_refused "an export missing an asset file" "missing the asset file" "$TEST_TMP/no-asset" --user alice
cp -r "$export_dir" "$TEST_TMP/bad-asset"
printf 'x' >>"$TEST_TMP/bad-asset/assets/$(sha256sum "$TEST_TMP/photo-3" | cut -d' ' -f1)"
expect_import_refused "an altered asset file" "does not hold the bytes" "$TEST_TMP/bad-asset" --user alice
cp -r "$export_dir" "$TEST_TMP/bad-line"
printf '{"recordName":"broken","recordType":"Setting","fields":{"x":{"value":"1.5","type":"INT64"}}}\n' \
  >>"$TEST_TMP/bad-line/iCloud.org.p0deje.Maccy/development/zones/History.jsonl"
expect_import_refused "a record line with a bad value" "History.jsonl line 7" "$TEST_TMP/bad-line" --user alice
# Found by the check before any write (hardening 6h), not after the schema was merged and the
# first container's records were written.
cp -r "$export_dir" "$TEST_TMP/bad-type"
printf '{"recordName":"odd","recordType":"HistoryItem","fields":{"title":{"value":5,"type":"INT64"}}}\n' \
  >>"$TEST_TMP/bad-type/iCloud.org.p0deje.Maccy/development/zones/History.jsonl"
expect_import_refused "a record whose field type conflicts with the schema" "Field title of record odd is STRING" "$TEST_TMP/bad-type" --user alice
cp -r "$export_dir" "$TEST_TMP/bad-subscription"
printf '[{"subscriptionID":"s1","subscriptionType":"query","firesOn":["create"]}]\n' \
  >"$TEST_TMP/bad-subscription/iCloud.org.p0deje.Maccy/development/subscriptions.json"
expect_import_refused "an invalid subscriptions.json" "Maccy/development/subscriptions.json: a subscription is not valid" \
  "$TEST_TMP/bad-subscription" --user alice
cp -r "$export_dir" "$TEST_TMP/duplicate"
head -n 1 "$TEST_TMP/duplicate/iCloud.org.p0deje.Maccy/development/zones/History.jsonl" \
  >>"$TEST_TMP/duplicate/iCloud.org.p0deje.Maccy/development/zones/History.jsonl"
expect_import_refused "a duplicate record line" "History.jsonl line 7: record .* is also on line 1" "$TEST_TMP/duplicate" --user alice
cp -r "$export_dir" "$TEST_TMP/large"
python3 -c 'import json; print(json.dumps({"recordName": "large", "recordType": "HistoryItem", "fields": {"title": {"value": "x" * 1100000, "type": "STRING"}}}))' \
  >>"$TEST_TMP/large/iCloud.org.p0deje.Maccy/development/zones/History.jsonl"
expect_import_refused "a record over maxRecordBytes" "record large has 11000.. bytes of fields, more than this server's maxRecordBytes (1048576)" \
  "$TEST_TMP/large" --user alice
"$NIMBUS_BIN" export --user nobody --output "$TEST_TMP/nobody" --database-url "$source_db" >"$TEST_TMP/refused.out" 2>&1 \
  && fail "export of an unknown user exited 0"
grep -q 'no user "nobody"' "$TEST_TMP/refused.out" || fail "export of an unknown user: $(cat "$TEST_TMP/refused.out")"
ok "export of an unknown user: $(cat "$TEST_TMP/refused.out")"

note "a write refused half-way stops the import with a report of what was finished"
half_db=$(fresh_database)
"$NIMBUS_BIN" migrate --database-url "$half_db" >/dev/null 2>&1 || fail "migrate of $half_db failed"
start_nimbus --database-url "$half_db"
NIMBUS_DB_URL=$half_db
nimbus_admin user add alice >/dev/null
issue_token OTHER alice other-mac
API_CONTAINER=iCloud.org.p0deje.Maccy
api_ok "$OTHER" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"History"}}}]}'
api_ok "$OTHER" records/modify '{"zoneID":{"zoneName":"History"},"operations":[{"operationType":"create","record":{"recordName":"h2","recordType":"HistoryItem","fields":{"title":{"value":"another h2"}}}}]}'
API_CONTAINER=iCloud.com.mirxa.AppLocker
stop_nimbus || fail "the half-way server did not stop"
"$NIMBUS_BIN" import "$export_dir" --user alice --database-url "$half_db" >"$TEST_TMP/half.out" 2>&1 && fail "an import over a conflicting record exited 0"
grep -q 'record h2 of zone History: Record h2 already exists with other content' "$TEST_TMP/half.out" \
  && grep -q 'finished before it: iCloud.com.mirxa.AppLocker development zone Photos: 3 records' "$TEST_TMP/half.out" \
  && grep -q 'run the same import again' "$TEST_TMP/half.out" || fail "the half-way report: $(cat "$TEST_TMP/half.out")"
ok "a refused write: $(grep '^error:' "$TEST_TMP/half.out" | cut -c1-400)"

note "nimbus import into the empty server, twice"
for round in 1 2; do
  "$NIMBUS_BIN" import "$export_dir" --user alice --database-url "$target_db" >"$TEST_TMP/import.out" 2>&1 \
    || fail "import round $round failed: $(cat "$TEST_TMP/import.out")"
done
ok "import (twice): $(tail -n 1 "$TEST_TMP/import.out")"
start_nimbus --database-url "$target_db"
NIMBUS_DB_URL=$target_db
issue_token PHONE alice phone
sync_all "$NIMBUS_URL" "$PHONE" "$TEST_TMP/target"
for part in applocker photos history; do
  python3 - "$TEST_TMP/source-$part.json" "$TEST_TMP/target-$part.json" <<'PY' || fail "$part: the imported records differ from the exported ones"
import json, sys
source, target = (json.load(open(p)) for p in sys.argv[1:3])
assert source["status"] == 200 and target["status"] == 200, (source.get("reason"), target.get("reason"))
if set(source["records"]) != set(target["records"]):
    sys.exit("names differ: only in source %s, only in target %s" % (sorted(set(source["records"]) - set(target["records"]))[:5],
             sorted(set(target["records"]) - set(source["records"]))[:5]))
def comparable(fields):
    out = {}
    for name, field in fields.items():
        value = field["value"]
        if field["type"].startswith("ASSETID"):
            value = {k: value[k] for k in ("fileChecksum", "size")}
        out[name] = (field["type"], value)
    return out
for name, record in source["records"].items():
    other = target["records"][name]
    if record["recordType"] != other["recordType"] or comparable(record["fields"]) != comparable(other["fields"]):
        sys.exit("record %s differs:\n%s\n%s" % (name, json.dumps(record["fields"])[:400], json.dumps(other["fields"])[:400]))
print(len(source["records"]))
PY
done
ok "a device syncing from no token gets the same records (names, types, fields, asset checksums) in all three zones"
for i in 1 2 3; do
  url=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['records']['fail-$i']['fields']['photoAsset']['value']['downloadURL'])" "$TEST_TMP/target-photos.json")
  asset_get "$PHONE" "$url" "$TEST_TMP/photo-$i.back"
  expect_status 200 "download of imported photo $i"
  expect_same_file "$TEST_TMP/photo-$i" "$TEST_TMP/photo-$i.back" "imported photo $i"
done
ok "the imported photos download byte for byte from the new server"
request GET "$(api_path subscriptions/list)" -H "Authorization: Bearer $PHONE"
expect_status 200 "subscriptions/list"
contains "$HTTP_BODY" -q sub-failed-auth || fail "the subscription was not imported: $HTTP_BODY"
API_CONTAINER=iCloud.org.p0deje.Maccy
api_ok "$PHONE" records/modify '{"zoneID":{"zoneName":"History"},"operations":[{"operationType":"forceDelete","record":{"recordName":"h2"}}]}'
api_ok "$PHONE" records/lookup '{"zoneID":{"zoneName":"History"},"records":[{"recordName":"a-content-2"}]}'
expect_item_codes NOT_FOUND "the content of a deleted imported item"
ok "the subscription came along, and imported DELETE_SELF references still cascade"
finish_scenario
