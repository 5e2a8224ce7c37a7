#!/usr/bin/env bash
# Encrypted fields (issue 30, docs/api.md "Encrypted fields"), the server's side on the wire:
# - the shipped Maccy schema declares HistoryItem.title and HistoryItemContent.value encrypted;
#   a plain or untyped value into them, ENCRYPTED_BYTES into a plain field, empty and non-base64
#   ciphertext are BAD_REQUEST items naming the field, and nothing is stored;
# - ciphertext comes back exactly as sent from lookups and the change feed, and in a sealed
#   alert's notification (an alert subscription whose desiredKeys name an encrypted field);
# - records/query and a query subscription cannot filter or sort on an encrypted field;
#   `nimbus schema import` refuses an encrypted retention field and a plain field turned encrypted;
#   ciphertext counts toward maxRecordBytes;
# - nothing readable on the server: the ciphertext holds a marker (standing for plaintext) between
#   random bytes; pg_dump, `nimbus backup`, `nimbus export` and the server's debug log never hold
#   the marker; pg_dump, the backup and the export hold the ciphertext exactly as sent; the admin
#   console's record page shows its size and neither the ciphertext nor the marker.
# (The real client's version, with NimbusKit's encryption, is the e2e client's scenario.)
source "$(dirname "$0")/../lib.sh"

API_CONTAINER=iCloud.org.p0deje.Maccy
API_ENV=development
start_store_server --log-level debug --max-record-bytes 4096
nimbus_admin schema import "$REPO_DIR/deploy/schemas/maccy.json" >/dev/null
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice phone
ADMIN_TOKEN=$(nimbus_admin admin token issue ops | sed -n 's/^token: //p')
ADMIN=$(admin_url)

# Stand-ins for ciphertext: random bytes around a marker no other byte of the test carries (in
# clear it stands for the clipboard's plaintext; sent base64, it must stay only that).
MARKER="e2e-plaintext-$(head -c 9 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
PLAIN_MARKER="plain-app-$(head -c 9 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
sealed() {  # sealed PREFIX_BYTES: base64 of random bytes, the marker, random bytes
  { head -c "$1" /dev/urandom; printf '%s' "$MARKER"; head -c 37 /dev/urandom; } | base64 -w0
}
TITLE_CT=$(sealed 31)
VALUE_CT=$(sealed 700)
VALUE_SIZE=$(printf '%s' "$VALUE_CT" | base64 -d | wc -c)

note "the Mac saves a history item and its contents as ciphertext"
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"History"}}}]}'
api_ok "$MAC" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"sealed-alert","subscriptionType":"query","query":{"recordType":"HistoryItem"},"firesOn":["create"],"notificationInfo":{"title":"New clipboard item","desiredKeys":["title","application"]}}}]}'
contains "$HTTP_BODY" -q serverErrorCode && fail "the sealed alert subscription: $HTTP_BODY"
api_ok "$PHONE" tokens/create '{}'
CHANNEL_URL=$(json_field webcourierURL) C0=$(json_field cursor)
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"History\"},\"operations\":[
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"h1\",\"recordType\":\"HistoryItem\",\"fields\":{\"application\":{\"value\":\"$PLAIN_MARKER\"},\"title\":{\"value\":\"$TITLE_CT\",\"type\":\"ENCRYPTED_BYTES\"},\"numberOfCopies\":{\"value\":1}}}},
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"c1\",\"recordType\":\"HistoryItemContent\",\"fields\":{\"type\":{\"value\":\"public.utf8-plain-text\"},\"value\":{\"value\":\"$VALUE_CT\",\"type\":\"ENCRYPTED_BYTES\"},\"item\":{\"value\":{\"recordName\":\"h1\",\"action\":\"DELETE_SELF\"}}}}}]}"
expect_item_codes "ok ok" "encrypted creates"
contains "$HTTP_BODY" -a -q "\"title\":{\"value\":\"$TITLE_CT\",\"type\":\"ENCRYPTED_BYTES\"}" || fail "the create answer changed the ciphertext: ${HTTP_BODY:0:400}"
ok "ciphertext saved into the shipped schema's encrypted fields"

note "the phone reads it back exactly as sent: lookup, changes, and the sealed alert"
api_ok "$PHONE" records/lookup '{"zoneID":{"zoneName":"History"},"records":[{"recordName":"c1"},{"recordName":"h1"}]}'
contains "$HTTP_BODY" -a -q "\"value\":{\"value\":\"$VALUE_CT\",\"type\":\"ENCRYPTED_BYTES\"}" || fail "lookup: ${HTTP_BODY:0:300}"
contains "$HTTP_BODY" -a -q "\"title\":{\"value\":\"$TITLE_CT\",\"type\":\"ENCRYPTED_BYTES\"}" || fail "lookup title: ${HTTP_BODY:0:300}"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"History"}}'
contains "$HTTP_BODY" -a -q "\"value\":{\"value\":\"$VALUE_CT\",\"type\":\"ENCRYPTED_BYTES\"}" || fail "changes: ${HTTP_BODY:0:300}"
request GET "${CHANNEL_URL#"$NIMBUS_URL"}?cursor=$C0" -H "Authorization: Bearer $PHONE"
expect_status 200 "the phone polls its channel"
# (Notifications are kept as jsonb: members come back in jsonb's order.)
contains "$HTTP_BODY" -a -q -F "\"title\":{\"type\":\"ENCRYPTED_BYTES\",\"value\":\"$TITLE_CT\"}" \
  && contains "$HTTP_BODY" -a -q -F "\"application\":{\"type\":\"STRING\",\"value\":\"$PLAIN_MARKER\"}" \
  && contains "$HTTP_BODY" -a -q -F '"alert":{"title":"New clipboard item"}' \
  || fail "the sealed alert does not carry the title's ciphertext: ${HTTP_BODY:0:600}"
ok "lookup, change feed and the sealed alert's fields carry the ciphertext unchanged"

note "refusals name the field and store nothing"
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"History\"},\"operations\":[
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"r-plain\",\"recordType\":\"HistoryItem\",\"fields\":{\"title\":{\"value\":\"my password\",\"type\":\"STRING\"}}}},
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"r-untyped\",\"recordType\":\"HistoryItem\",\"fields\":{\"title\":{\"value\":\"bXkgcGFzc3dvcmQ=\"}}}},
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"r-into-plain\",\"recordType\":\"HistoryItem\",\"fields\":{\"application\":{\"value\":\"bXkgcGFzc3dvcmQ=\",\"type\":\"ENCRYPTED_BYTES\"}}}},
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"r-empty\",\"recordType\":\"HistoryItemContent\",\"fields\":{\"value\":{\"value\":\"\",\"type\":\"ENCRYPTED_BYTES\"}}}},
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"r-not-base64\",\"recordType\":\"HistoryItemContent\",\"fields\":{\"value\":{\"value\":\"my password\",\"type\":\"ENCRYPTED_BYTES\"}}}}]}"
expect_item_codes "BAD_REQUEST BAD_REQUEST BAD_REQUEST BAD_REQUEST BAD_REQUEST" "five refused fields"
reasons=$(record_items | sed -n 's/.*"reason":"\([^"]*\)".*/\1/p')
for expected in "Field title of record r-plain is encrypted" "Field title of record r-untyped is encrypted" \
    "Field application of record r-into-plain is STRING in the schema of HistoryItem, not encrypted" \
    "Field value of record r-empty expects ENCRYPTED_BYTES, but the value is an empty string" \
    "Field value of record r-not-base64 expects ENCRYPTED_BYTES, but the value is a string that is not standard padded base64"; do
  contains "$reasons" -a -q -F "$expected" || fail "no reason says '$expected': $reasons"
done
api_ok "$PHONE" records/lookup '{"zoneID":{"zoneName":"History"},"records":[{"recordName":"r-plain"},{"recordName":"r-untyped"},{"recordName":"r-into-plain"},{"recordName":"r-empty"},{"recordName":"r-not-base64"}]}'
expect_item_codes "NOT_FOUND NOT_FOUND NOT_FOUND NOT_FOUND NOT_FOUND" "nothing of the refused records was stored"
ok "plain into encrypted, untyped, ENCRYPTED_BYTES into plain, empty and non-base64: BAD_REQUEST naming the field, nothing stored"

note "no filter or sort on an encrypted field, in queries and query subscriptions"
api "$PHONE" records/query '{"zoneID":{"zoneName":"History"},"query":{"recordType":"HistoryItem","filterBy":[{"fieldName":"title","comparator":"EQUALS","fieldValue":{"value":"'"$TITLE_CT"'","type":"ENCRYPTED_BYTES"}}]}}'
expect_api_error 400 BAD_REQUEST "filter on an encrypted field"
contains "$HTTP_BODY" -q 'filterBy names title, an encrypted field' || fail "filter refusal: $HTTP_BODY"
api "$PHONE" records/query '{"zoneID":{"zoneName":"History"},"query":{"recordType":"HistoryItem","sortBy":[{"fieldName":"title"}]}}'
expect_api_error 400 BAD_REQUEST "sort on an encrypted field"
contains "$HTTP_BODY" -q 'sortBy names title, an encrypted field of HistoryItem' || fail "sort refusal: $HTTP_BODY"
api_ok "$PHONE" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"by-title","subscriptionType":"query","query":{"recordType":"HistoryItem","filterBy":[{"fieldName":"title","comparator":"NOT_EQUALS","fieldValue":{"value":"QUJD","type":"ENCRYPTED_BYTES"}}]}}}]}'
contains "$HTTP_BODY" -q '"serverErrorCode":"BAD_REQUEST"' && contains "$HTTP_BODY" -q 'filterBy names title' || fail "subscription filter: $HTTP_BODY"
ok "records/query filter and sort and a subscription's filterBy on title: BAD_REQUEST naming it"

note "ciphertext counts toward maxRecordBytes (4096 here) by its decoded size"
# 4000 bytes (5336 characters of base64) fit: the stored JSON around them is 55 bytes.
big=$(head -c 4000 /dev/urandom | base64 -w0)
api_ok "$MAC" records/modify '{"zoneID":{"zoneName":"History"},"operations":[{"operationType":"create","record":{"recordName":"big","recordType":"HistoryItemContent","fields":{"value":{"value":"'"$big"'","type":"ENCRYPTED_BYTES"}}}}]}'
expect_item_codes ok "a record of 4000 bytes of ciphertext (decoded)"
bigger=$(head -c 4100 /dev/urandom | base64 -w0)
api_ok "$MAC" records/modify '{"zoneID":{"zoneName":"History"},"operations":[{"operationType":"create","record":{"recordName":"bigger","recordType":"HistoryItemContent","fields":{"value":{"value":"'"$bigger"'","type":"ENCRYPTED_BYTES"}}}}]}'
expect_item_codes LIMIT_EXCEEDED "a record of 4100 bytes of ciphertext"
ok "4000 bytes of ciphertext fit in 4096 (counted decoded, not as 5336 characters); 4100 bytes: LIMIT_EXCEEDED"

note "schema import refuses an encrypted retention field and a plain field turned encrypted"
printf '%s' '{"container":"iCloud.org.p0deje.Maccy","recordTypes":{"Expiring":{"fields":{"at":{"type":"TIMESTAMP","encrypted":true}},"retention":{"days":1,"field":"at"}}}}' >"$TEST_TMP/retention.json"
if "$NIMBUS_BIN" schema import "$TEST_TMP/retention.json" --database-url "$NIMBUS_DB_URL" >"$TEST_TMP/retention.out" 2>&1; then
  fail "an encrypted retention field was imported"
fi
contains "$(cat "$TEST_TMP/retention.out")" -q 'the retention field of Expiring is at, which is encrypted' || fail "retention refusal: $(cat "$TEST_TMP/retention.out")"
printf '%s' '{"container":"iCloud.org.p0deje.Maccy","recordTypes":{"HistoryItem":{"fields":{"application":{"type":"STRING","encrypted":true}}}}}' >"$TEST_TMP/turned.json"
if "$NIMBUS_BIN" schema import "$TEST_TMP/turned.json" --database-url "$NIMBUS_DB_URL" >"$TEST_TMP/turned.out" 2>&1; then
  fail "a plain field was turned encrypted"
fi
contains "$(cat "$TEST_TMP/turned.out")" -q -F 'Field HistoryItem.application is STRING in development; it cannot become STRING (encrypted)' \
  || fail "plain → encrypted refusal: $(cat "$TEST_TMP/turned.out")"
contains "$(nimbus_admin schema show iCloud.org.p0deje.Maccy)" -q '"title":{"encrypted":true,"type":"STRING"}' || fail "schema show: $(nimbus_admin schema show iCloud.org.p0deje.Maccy)"
ok "both refused, naming the field; schema show writes the encrypted form"

note "nothing readable on the server: pg_dump, nimbus backup, nimbus export, the console, the log"
# checked FILE WHAT: FILE holds both ciphertexts exactly and the plain marker, never the marker.
checked() {
  grep -a -q -F "$MARKER" "$1" && fail "$2 holds the plaintext marker"
  grep -a -q -F "$TITLE_CT" "$1" && grep -a -q -F "$VALUE_CT" "$1" || fail "$2 does not hold the ciphertext exactly as sent"
  grep -a -q -F "$PLAIN_MARKER" "$1" || fail "$2 does not hold the plain field (the search would find nothing)"
}
"$NIMBUS_TEST_PG_BIN/pg_dump" --no-owner "$NIMBUS_DB_URL" >"$TEST_TMP/dump.sql" || fail "pg_dump failed"
checked "$TEST_TMP/dump.sql" "pg_dump"
nimbus_admin backup --output "$TEST_TMP/nimbus.dump" >/dev/null
"$NIMBUS_TEST_PG_BIN/pg_restore" --file="$TEST_TMP/backup.sql" "$TEST_TMP/nimbus.dump" || fail "pg_restore of the backup failed"
checked "$TEST_TMP/backup.sql" "nimbus backup"
nimbus_admin export --user alice --output "$TEST_TMP/export" >/dev/null
cat $(find "$TEST_TMP/export" -type f) >"$TEST_TMP/export.all"
checked "$TEST_TMP/export.all" "nimbus export"
contains "$(find "$TEST_TMP/export" -name schema.json -path '*Maccy*' -exec cat {} \;)" -q '"value":{"encrypted":true,"type":"BYTES"}' \
  || fail "the export's schema lost the encrypted flag"
target_db=$(fresh_database) || exit 1
"$NIMBUS_BIN" migrate --database-url "$target_db" >/dev/null 2>&1 || fail "migrate of the import target failed"
"$NIMBUS_BIN" user add alice --database-url "$target_db" >/dev/null || fail "user add on the import target failed"
"$NIMBUS_BIN" import "$TEST_TMP/export" --user alice --database-url "$target_db" >"$TEST_TMP/import.out" 2>&1 \
  || fail "nimbus import of the export failed: $(cat "$TEST_TMP/import.out")"
imported=$("$NIMBUS_TEST_PG_BIN/psql" "$target_db" -X -q -At -c "SELECT fields::text FROM records WHERE record_name IN ('c1', 'h1') ORDER BY record_name")
contains "$imported" -q -F "$VALUE_CT" && contains "$imported" -q -F "$TITLE_CT" || fail "the imported records lost the ciphertext: ${imported:0:300}"
HTTP_STATUS=$(curl -sS --max-time 20 -o "$TEST_TMP/console.json" -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" \
  "$ADMIN/api/records?user=alice&container=iCloud.org.p0deje.Maccy&environment=development&zoneName=History") || fail "console records"
[ "$HTTP_STATUS" = 200 ] || fail "console records: $HTTP_STATUS $(cat "$TEST_TMP/console.json")"
console=$(cat "$TEST_TMP/console.json")
contains "$console" -q -F "\"value\":{\"type\":\"ENCRYPTED_BYTES\",\"size\":$VALUE_SIZE}" || fail "the console does not show the value's size ($VALUE_SIZE): ${console:0:600}"
contains "$console" -q -F "$PLAIN_MARKER" || fail "the console does not show plain fields: ${console:0:600}"
for secret in "$MARKER" "$TITLE_CT" "$VALUE_CT" "${VALUE_CT:0:40}"; do
  contains "$console" -q -F "$secret" && fail "the console's record page shows ciphertext or plaintext"
done
contains "$(curl -sS --max-time 20 "$ADMIN/pages-data.js")" -q -F 'encrypted, ${field.size' || fail "the console's record page does not render encrypted sizes"
for secret in "$MARKER" "$TITLE_CT" "$VALUE_CT"; do
  grep -a -q -F "$secret" "$NIMBUS_LOG" && fail "the server's debug log holds ciphertext or plaintext"
done
[ "$(grep -a -c . "$NIMBUS_LOG")" -gt 10 ] || fail "the server's log is empty (the search would find nothing)"
ok "marker in none of pg_dump, backup, export, console, log; ciphertext only as sent (and as imported); the console shows $VALUE_SIZE bytes"

expect_no_server_errors
