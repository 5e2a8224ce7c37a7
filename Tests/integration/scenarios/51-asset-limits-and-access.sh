#!/usr/bin/env bash
# Assets (issue 5): maxAssetBytes at the byte edge over the wire (N accepted, N + 1 refused with
# 413 LIMIT_EXCEEDED, Content-Length and chunked, refused from the head alone, nothing stored, the
# URL not used up); --max-asset-bytes above 1 GiB is a usage error (exit 64); upload and download
# URLs follow --public-url. The rules in process (single-use and owned upload URLs, download
# access, 200 upload tokens per request, receipts, the quota over all of a user's databases and
# under concurrent uploads, URLs from Host): Tests/NimbusAPITests/AssetTests.swift and
# AssetQuotaTests.swift.
source "$(dirname "$0")/../lib.sh"

MAX=100000
QUOTA=400000
start_store_server --max-asset-bytes $MAX --user-quota-bytes $QUOTA
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac-mini

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
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"small\",\"recordType\":\"Blob\",\"fields\":{\"data\":$UP_FIELD}}}]}"
expect_item_codes ok "a record with the asset"

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
ok "upload and download URLs are absolute, from --public-url"

expect_no_server_errors
finish_scenario
