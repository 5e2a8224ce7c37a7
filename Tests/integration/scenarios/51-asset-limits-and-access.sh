#!/usr/bin/env bash
# Assets (issue 5): limits and access. maxAssetBytes at the edge (N accepted, N + 1 refused with
# 413 LIMIT_EXCEEDED, Content-Length and chunked, refused from the head alone, nothing stored,
# the URL not used up); the storage quota at the edge (QUOTA_EXCEEDED 413 in any of the user's
# databases, nothing stored; re-uploading stored bytes and concurrent uploads must not get around
# or trip over it); 200 upload URLs per request, 201 refused; wrong receipts in a record are
# BAD_REQUEST items; upload URLs are single-use and only their owner's; another user's download
# URL is NOT_FOUND; missing or invalid bearer 401; --max-asset-bytes above 1 GiB is a usage error
# (exit 64); upload and download URLs follow --public-url, else Host.
source "$(dirname "$0")/../lib.sh"

MAX=100000
QUOTA=400000
start_store_server --max-asset-bytes $MAX --user-quota-bytes $QUOTA
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
nimbus_admin user add carol >/dev/null
issue_token MAC alice mac-mini
issue_token PHONE alice iphone
issue_token BOB bob bob-mac
issue_token CAROL carol carol-mac

request GET /limits
expect_status 200 "GET /limits"
expect_json_field maxAssetBytes $MAX
expect_json_field userQuotaBytes $QUOTA
expect_json_field maxAssetTokensPerRequest 200
ok "/limits: maxAssetBytes $MAX, userQuotaBytes $QUOTA, maxAssetTokensPerRequest 200"

# MARK: maxAssetBytes

random_file "$TEST_TMP/max" $MAX
random_file "$TEST_TMP/over" $((MAX + 1))
expect_asset_counts "0 0" "before any upload"

asset_upload_url "$MAC" Blob data
edge_url=$ASSET_URL edge_path=$ASSET_URL_PATH
asset_post "$MAC" "$edge_url" "$TEST_TMP/over" length
expect_api_error 413 LIMIT_EXCEEDED "upload of $((MAX + 1)) bytes with Content-Length"
asset_post "$MAC" "$edge_url" "$TEST_TMP/over" chunked
expect_api_error 413 LIMIT_EXCEEDED "upload of $((MAX + 1)) bytes, chunked"
expect_asset_counts "0 0" "after refused over-size uploads"
wait_open_transactions 0 5 || fail "$OPEN_TX database sessions still inside a transaction after refused uploads"
ok "$((MAX + 1)) bytes: 413 LIMIT_EXCEEDED with Content-Length and chunked; no assets or chunk rows"

raw_upload_head "$MAC" "$edge_path" $((MAX + 1))
raw_read 3
raw_close
expect_raw_error 413 LIMIT_EXCEEDED "a Content-Length of $((MAX + 1)) without its body"
[ "$RAW_ELAPSED_MS" -lt 2500 ] || fail "the over-size Content-Length was refused only after $RAW_ELAPSED_MS ms"
raw_upload_head "$MAC" "$edge_path" chunked
raw_send "$(printf '%x' $((MAX + 1)))"$'\r\n'"$(repeat_char x 1000)"
raw_read 3
raw_close
expect_raw_error 413 LIMIT_EXCEEDED "a chunk declared $((MAX + 1)) bytes long"
expect_asset_counts "0 0" "after refused over-size heads"
ok "an over-size Content-Length or chunk size is refused at once, before its bytes arrive"

asset_post "$MAC" "$edge_url" "$TEST_TMP/max" length
expect_status 200 "upload of exactly $MAX bytes to the URL whose over-size attempts were refused"
parse_upload
[ "$UP_SIZE" = $MAX ] && [ "$UP_CHECKSUM" = "$(b64_sha256 "$TEST_TMP/max")" ] || fail "upload of $MAX bytes answered $HTTP_BODY"
random_file "$TEST_TMP/max2" $MAX
upload_asset "$MAC" "$TEST_TMP/max2" chunked
expect_asset_counts "2 $(psql_db "SELECT count(*) FROM asset_chunks")" "after two uploads of $MAX bytes"
[ "$(psql_db "SELECT sum(size) FROM assets WHERE complete")" = $((2 * MAX)) ] || fail "two $MAX-byte uploads did not store $((2 * MAX)) bytes"
ok "exactly $MAX bytes: accepted with Content-Length (on the URL refused before: not used up) and chunked"

# MARK: reuse and ownership of upload URLs

asset_post "$MAC" "$edge_url" "$TEST_TMP/max" length
expect_api_error 404 NOT_FOUND "a used upload URL"
ok "an upload URL used by a successful upload is NOT_FOUND afterwards"

asset_upload_url "$MAC" Blob data
alice_url=$ASSET_URL
random_file "$TEST_TMP/small" 1000
asset_post "$BOB" "$alice_url" "$TEST_TMP/small" length
expect_api_error 404 NOT_FOUND "bob uploading to alice's upload URL"
asset_post "$BOB" "$alice_url" "$TEST_TMP/small" chunked
expect_api_error 404 NOT_FOUND "bob uploading to alice's upload URL, chunked"
asset_post - "$alice_url" "$TEST_TMP/small" length
expect_api_error 401 AUTHENTICATION_REQUIRED "upload without Authorization"
asset_post "not-a-token" "$alice_url" "$TEST_TMP/small" length
expect_api_error 401 AUTHENTICATION_FAILED "upload with an unknown bearer token"
asset_post - "$alice_url" "$TEST_TMP/small" length -H "Authorization: Basic YWxpY2U6cHc="
expect_api_error 401 AUTHENTICATION_FAILED "upload with Basic authorization"
asset_post "$PHONE" "$alice_url" "$TEST_TMP/small" length
expect_status 200 "alice's other device uploading to the URL after the refused attempts"
parse_upload
small_checksum=$UP_CHECKSUM small_receipt=$UP_RECEIPT
asset_post "$BOB" "${NIMBUS_URL}/assets/1/upload/doesnotexist" "$TEST_TMP/small" length
expect_api_error 404 NOT_FOUND "an unknown upload id"
ok "another user's upload URL is NOT_FOUND, no bearer 401 AUTHENTICATION_REQUIRED, a bad one AUTHENTICATION_FAILED; none uses the URL up"

# MARK: download access

api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"small\",\"recordType\":\"Blob\",\"fields\":{\"data\":$(asset_field "$small_checksum" 1000 "$small_receipt")}}}]}"
expect_item_codes ok "record with an asset"
download=$(asset_member small data downloadURL) || fail "no downloadURL in $HTTP_BODY"
asset_get "$PHONE" "$download" "$TEST_TMP/small-down"
expect_status 200 "alice's phone downloading"
expect_same_file "$TEST_TMP/small" "$TEST_TMP/small-down" "alice's download"
asset_get "$BOB" "$download" "$TEST_TMP/bob-down"
expect_api_error 404 NOT_FOUND "bob downloading alice's asset"
asset_get "$BOB" "$download" "$TEST_TMP/bob-down" --head
[ "$HTTP_STATUS" = 404 ] || fail "bob's HEAD of alice's asset answered $HTTP_STATUS"
asset_get - "$download" "$TEST_TMP/anon-down"
expect_api_error 401 AUTHENTICATION_REQUIRED "download without Authorization"
asset_get "not-a-token" "$download" "$TEST_TMP/anon-down"
expect_api_error 401 AUTHENTICATION_FAILED "download with an unknown bearer token"
# The same handle with its last character changed.
last=${download: -1}
other=A
[ "$last" = A ] && other=B
asset_get "$PHONE" "${download%?}$other" "$TEST_TMP/tampered-down"
expect_api_error 404 NOT_FOUND "a tampered download URL"
nimbus_admin token revoke "$PHONE_ID" >/dev/null
asset_get "$PHONE" "$download" "$TEST_TMP/revoked-down"
expect_api_error 401 AUTHENTICATION_FAILED "download with a revoked token"
issue_token PHONE alice iphone
ok "downloads: another user's or a tampered URL NOT_FOUND; no bearer 401 AUTHENTICATION_REQUIRED; unknown or revoked token AUTHENTICATION_FAILED"

# MARK: upload tokens per request

tokens=""
for ((i = 0; i < 200; i++)); do tokens+="${tokens:+,}{\"recordType\":\"Blob\",\"fieldName\":\"data\",\"recordName\":\"r$i\"}"; done
api "$MAC" assets/upload "{\"tokens\":[$tokens,{\"recordType\":\"Blob\",\"fieldName\":\"data\"}]}"
expect_api_error 413 LIMIT_EXCEEDED "201 upload tokens"
api_ok "$MAC" assets/upload "{\"tokens\":[$tokens]}"
count=$(contains "$HTTP_BODY" -a -o '"url":"[^"]*"' | sort -u | grep -c .)
[ "$count" = 200 ] || fail "200 tokens: $count distinct URLs"
contains "$HTTP_BODY" -a -q '{"recordName":"r199","fieldName":"data","url":"'"$NIMBUS_URL"'/assets/1/upload/' || fail "token r199 not echoed: ${HTTP_BODY: -300}"
api "$MAC" assets/upload '{"zoneID":{"zoneName":"nowhere"},"tokens":[{"recordType":"Blob","fieldName":"data"}]}'
expect_api_error 404 ZONE_NOT_FOUND "assets/upload in a missing zone"
api "$MAC" assets/upload '{"tokens":[{"recordType":"Blob"}]}'
expect_api_error 400 BAD_REQUEST "a token without fieldName"
ok "assets/upload: 200 tokens give 200 distinct URLs, 201 are LIMIT_EXCEEDED; missing zone ZONE_NOT_FOUND; bad token BAD_REQUEST"

# MARK: receipts

note "wrong receipts in records"
random_file "$TEST_TMP/x" 1000
random_file "$TEST_TMP/y" 1000
upload_asset "$MAC" "$TEST_TMP/x"
x_checksum=$UP_CHECKSUM x_receipt=$UP_RECEIPT
upload_asset "$MAC" "$TEST_TMP/y"
y_checksum=$UP_CHECKSUM
upload_asset "$BOB" "$TEST_TMP/x"
bob_receipt=$UP_RECEIPT
[ "$UP_CHECKSUM" = "$x_checksum" ] || fail "bob's upload of the same bytes has another checksum"
API_CONTAINER=iCloud.org.p0deje.Maccy
upload_asset "$MAC" "$TEST_TMP/x"
maccy_receipt=$UP_RECEIPT
API_CONTAINER=iCloud.com.mirxa.AppLocker
record() { printf '{"operationType":"create","record":{"recordName":"%s","recordType":"Blob","fields":{"data":%s}}}' "$1" "$2"; }
api_ok "$MAC" records/modify "{\"operations\":[
  $(record w-size "$(asset_field "$x_checksum" 1001 "$x_receipt")"),
  $(record w-checksum "$(asset_field "$y_checksum" 1000 "$x_receipt")"),
  $(record w-bob "$(asset_field "$x_checksum" 1000 "$bob_receipt")"),
  $(record w-other-db "$(asset_field "$x_checksum" 1000 "$maccy_receipt")"),
  $(record w-garbage "$(asset_field "$x_checksum" 1000 garbage)"),
  $(record w-empty "$(asset_field "$x_checksum" 1000 "")"),
  $(record w-none "{\"value\":{\"fileChecksum\":\"$x_checksum\",\"size\":1000},\"type\":\"ASSETID\"}"),
  $(record w-not-base64 "$(asset_field 'not*base64' 1000 "$x_receipt")"),
  $(record w-negative "$(asset_field "$x_checksum" -1 "$x_receipt")"),
  $(record w-good "$(asset_field "$x_checksum" 1000 "$x_receipt")")]}"
expect_item_codes "BAD_REQUEST BAD_REQUEST BAD_REQUEST BAD_REQUEST BAD_REQUEST BAD_REQUEST BAD_REQUEST BAD_REQUEST BAD_REQUEST ok" "records with wrong receipts"
api_ok "$MAC" records/lookup '{"records":[{"recordName":"w-size"},{"recordName":"w-checksum"},{"recordName":"w-bob"},{"recordName":"w-other-db"},{"recordName":"w-good"}]}'
expect_item_codes "NOT_FOUND NOT_FOUND NOT_FOUND NOT_FOUND ok" "lookup after the wrong receipts"
ok "receipts: other size, other checksum, bob's database, alice's other database, garbage, empty, missing, bad checksum, negative size: BAD_REQUEST items, nothing saved"

# MARK: quota

# stored_bytes DEVICE: bytes of complete assets in every database of the user of DEVICE's token.
stored_bytes() {
  psql_db "SELECT COALESCE(sum(a.size), 0) FROM assets a JOIN databases d ON d.id = a.database_id
           WHERE a.complete AND d.owner_user_id = (SELECT user_id FROM device_tokens WHERE device_name = '$1' LIMIT 1)"
}
room=$((QUOTA - $(stored_bytes mac-mini)))
fill=0
while [ "$room" -gt $MAX ]; do
  fill=$((fill + 1))
  random_file "$TEST_TMP/fill$fill" $MAX
  upload_asset "$MAC" "$TEST_TMP/fill$fill"
  room=$((QUOTA - $(stored_bytes mac-mini)))
done
[ "$room" -gt 0 ] && [ "$room" -le $MAX ] || fail "setup: alice has $room bytes of room, expected 1..$MAX"
random_file "$TEST_TMP/room-plus" $((room + 1))
random_file "$TEST_TMP/room" $room
counts=$(asset_counts)
asset_upload_url "$MAC" Blob data
quota_url=$ASSET_URL
asset_post "$MAC" "$quota_url" "$TEST_TMP/room-plus" length
expect_api_error 413 QUOTA_EXCEEDED "upload of $((room + 1)) bytes with $room bytes of quota left"
asset_post "$MAC" "$quota_url" "$TEST_TMP/room-plus" chunked
expect_api_error 413 QUOTA_EXCEEDED "chunked upload of $((room + 1)) bytes with $room bytes of quota left"
expect_asset_counts "$counts" "after uploads refused for the quota" 3
asset_post "$MAC" "$quota_url" "$TEST_TMP/room" length
expect_status 200 "upload of exactly the $room bytes left"
random_file "$TEST_TMP/one" 1
asset_upload_url "$MAC" Blob data
counts=$(asset_counts)
asset_post "$PHONE" "$ASSET_URL" "$TEST_TMP/one" chunked
expect_api_error 413 QUOTA_EXCEEDED "one more byte at the quota (another device)"
API_CONTAINER=iCloud.org.p0deje.Maccy
asset_upload_url "$MAC" HistoryItemContent asset
asset_post "$MAC" "$ASSET_URL" "$TEST_TMP/one" length
expect_api_error 413 QUOTA_EXCEEDED "one more byte at the quota (alice's other database)"
API_CONTAINER=iCloud.com.mirxa.AppLocker
expect_asset_counts "$counts" "after the refused byte"
upload_asset "$BOB" "$TEST_TMP/one"
ok "quota: $((room + 1)) bytes with $room left QUOTA_EXCEEDED (both framings, nothing stored), exactly $room accepted, then 1 byte refused in any of alice's databases; bob is not affected"

# Bytes already stored take no more room: uploading them again at the quota must still work (a
# client retrying an upload whose answer it lost).
asset_upload_url "$MAC" Blob data
asset_post "$MAC" "$ASSET_URL" "$TEST_TMP/small" length
if [ "$HTTP_STATUS" = 200 ]; then
  ok "at the quota, bytes already stored upload again (deduplicated)"
else
  defer_fail "at the quota, re-uploading 1000 bytes that are already stored answered $HTTP_STATUS $(json_field serverErrorCode): they would take no room"
fi

note "carol: 5 concurrent uploads of $MAX bytes against a quota of $QUOTA"
pids=()
for i in 1 2 3 4 5; do
  random_file "$TEST_TMP/c$i" $MAX
  asset_upload_url "$CAROL" Blob data
  curl -s --max-time 30 -X POST -H "Authorization: Bearer $CAROL" --limit-rate 40k -T "$TEST_TMP/c$i" -o "$TEST_TMP/c$i.out" -w '%{http_code}\n' "$ASSET_URL" >"$TEST_TMP/c$i.status" &
  pids+=("$!")
  track_pid "$!"
done
wait "${pids[@]}"
statuses=$(cat "$TEST_TMP"/c?.status | paste -sd' ')
carol_bytes=$(stored_bytes carol-mac)
if [ "$carol_bytes" -le $QUOTA ]; then
  ok "concurrent uploads stay within the quota (statuses $statuses; carol stores $carol_bytes bytes)"
else
  defer_fail "5 concurrent uploads of $MAX bytes (statuses $statuses) left carol with $carol_bytes bytes stored, over her quota of $QUOTA"
fi

# MARK: the configured maximum

"$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url "$NIMBUS_DB_URL" --max-asset-bytes 1073741825 >"$TEST_TMP/over-gib.log" 2>&1 &
over_pid=$!
track_pid "$over_pid"
wait_exit "$over_pid" 20
status=$?
[ "$status" = 64 ] || fail "serve --max-asset-bytes 1073741825 exited with $status, not 64: $(head -c 300 "$TEST_TMP/over-gib.log")"
grep -q -- '--max-asset-bytes' "$TEST_TMP/over-gib.log" || fail "the usage error does not name --max-asset-bytes: $(head -c 300 "$TEST_TMP/over-gib.log")"
first_url=$NIMBUS_URL first_pid=$NIMBUS_PID first_log=$NIMBUS_LOG
start_nimbus --database-url "$NIMBUS_DB_URL" --max-asset-bytes 1073741824 --public-url https://sync.example.org/nimbus/
request GET /limits
expect_json_field maxAssetBytes 1073741824
ok "--max-asset-bytes 1073741825 is a usage error (exit 64); 1073741824 (1 GiB) is accepted"
api_ok "$MAC" assets/upload '{"tokens":[{"recordType":"Blob","fieldName":"data"}]}'
[[ $(json_field url) == https://sync.example.org/nimbus/assets/1/upload/?* ]] || fail "with --public-url the upload URL is $(json_field url)"
api_ok "$MAC" records/lookup '{"records":[{"recordName":"small"}]}'
[[ $(asset_member small data downloadURL) == https://sync.example.org/nimbus/assets/1/download/?* ]] \
  || fail "with --public-url the downloadURL is $(asset_member small data downloadURL)"
stop_nimbus
NIMBUS_URL=$first_url NIMBUS_PID=$first_pid NIMBUS_LOG=$first_log
request POST "$(api_path records/lookup)" -H "Authorization: Bearer $MAC" -H 'Host: sync.example.test:8443' --data-binary '{"records":[{"recordName":"small"}]}'
expect_status 200 "records/lookup with another Host"
[[ $(asset_member small data downloadURL) == http://sync.example.test:8443/assets/1/download/?* ]] \
  || fail "with Host sync.example.test:8443 the downloadURL is $(asset_member small data downloadURL)"
ok "upload and download URLs are absolute: from --public-url, else from the request's Host"

expect_no_server_errors
finish_scenario
