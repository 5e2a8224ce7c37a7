#!/usr/bin/env bash
# Assets (issue 5): uploads that do not finish. A connection cut while the bytes stream into
# asset_chunks (raw Content-Length body, raw chunked body, curl killed mid-transfer) leaves no
# asset and no chunk rows, releases its database session, does not use the URL up, and the
# server carries on. A stalled upload gets 408 after --body-timeout-seconds with the same
# outcome. Uploads in progress must not take every pooled database connection from the rest of
# the API.
source "$(dirname "$0")/../lib.sh"

BODY_TIMEOUT=3
start_store_server --body-timeout-seconds $BODY_TIMEOUT
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac-mini

random_file "$TEST_TMP/kept" 300000
upload_asset "$MAC" "$TEST_TMP/kept"
baseline=$(asset_counts)
note "baseline assets/asset_chunks rows: $baseline"

# after_cut WHAT URL: nothing stored, no session left in a transaction, the server healthy, and
# the URL still takes a complete upload (which is then removed from the expectations' baseline).
after_cut() {
  local what=$1 url=$2
  expect_asset_counts "$baseline" "$what" 5
  wait_open_transactions 0 5 || fail "$what: $OPEN_TX database sessions still inside a transaction"
  healthy "$what"
  random_file "$TEST_TMP/retry" 70000
  asset_post "$MAC" "$url" "$TEST_TMP/retry" length
  expect_status 200 "$what: the complete upload to the same URL afterwards"
  parse_upload
  [ "$UP_CHECKSUM" = "$(b64_sha256 "$TEST_TMP/retry")" ] || fail "$what: the retried upload's checksum is wrong"
  baseline=$(asset_counts)
}

note "raw upload with Content-Length: 2,000,000 announced, 600,000 sent, connection closed"
asset_upload_url "$MAC" Blob data
raw_upload_head "$MAC" "$ASSET_URL_PATH" 2000000
( head -c 600000 /dev/urandom >&"$RAW_FD" ) 2>/dev/null
wait_uploads_streaming 1 10 || fail "no upload is streaming into asset_chunks after 600,000 bytes"
raw_close
after_cut "Content-Length upload cut after 600,000 of 2,000,000 bytes" "$ASSET_URL"
ok "Content-Length upload cut mid-body: no asset, no chunks, no open transaction, the URL still works"

note "raw chunked upload: three 256 KiB chunks and half of a fourth, connection closed"
asset_upload_url "$MAC" Blob data
raw_upload_head "$MAC" "$ASSET_URL_PATH" chunked
for i in 1 2 3; do
  raw_send $'40000\r\n'
  ( head -c 262144 /dev/urandom >&"$RAW_FD" ) 2>/dev/null
  raw_send $'\r\n'
done
raw_send $'40000\r\n'
( head -c 100000 /dev/urandom >&"$RAW_FD" ) 2>/dev/null
wait_uploads_streaming 1 10 || fail "no upload is streaming into asset_chunks after 3.4 chunks"
raw_close
after_cut "chunked upload cut inside a chunk" "$ASSET_URL"
ok "chunked upload cut mid-chunk: no asset, no chunks, no open transaction, the URL still works"

note "curl uploading 3 MB at 300 KB/s, killed after about a second"
random_file "$TEST_TMP/slow" 3000000
asset_upload_url "$MAC" Blob data
curl -s --max-time 30 -X POST -H "Authorization: Bearer $MAC" --limit-rate 300k -T "$TEST_TMP/slow" -o /dev/null "$ASSET_URL" &
curl_pid=$!
track_pid "$curl_pid"
wait_uploads_streaming 1 10 || fail "curl's upload never streamed into asset_chunks"
sleep 0.5
process_alive "$curl_pid" || fail "curl finished a 3 MB upload at 300 KB/s within a second"
kill -KILL "$curl_pid"
wait "$curl_pid" 2>/dev/null
after_cut "curl killed mid-upload" "$ASSET_URL"
ok "curl killed mid-upload: no asset, no chunks, no open transaction, the URL still works"

# MARK: stalled uploads

note "stalled uploads: head and 300,000 of 1,000,000 bytes, then nothing (body timeout ${BODY_TIMEOUT}s)"
asset_upload_url "$MAC" Blob data
raw_upload_head "$MAC" "$ASSET_URL_PATH" 1000000
( head -c 300000 /dev/urandom >&"$RAW_FD" ) 2>/dev/null
raw_read $((BODY_TIMEOUT + 6))
raw_close
expect_raw_error 408 BAD_REQUEST "stalled Content-Length upload"
[ "$RAW_ELAPSED_MS" -ge $(( BODY_TIMEOUT * 1000 - 500 )) ] || fail "the stalled upload was answered after only $RAW_ELAPSED_MS ms"
after_cut "stalled Content-Length upload" "$ASSET_URL"
ok "stalled Content-Length upload: 408 after ${RAW_ELAPSED_MS} ms, connection closed, nothing stored, the URL still works"

asset_upload_url "$MAC" Blob data
raw_upload_head "$MAC" "$ASSET_URL_PATH" chunked
raw_send $'10\r\n0123456789abcdef\r\n8'
raw_read $((BODY_TIMEOUT + 6))
raw_close
expect_raw_error 408 BAD_REQUEST "stalled chunked upload (inside a chunk-size line)"
after_cut "stalled chunked upload" "$ASSET_URL"
asset_upload_url "$MAC" Blob data
raw_upload_head "$MAC" "$ASSET_URL_PATH" 5000
raw_read $((BODY_TIMEOUT + 6))
raw_close
expect_raw_error 408 BAD_REQUEST "upload head without any body"
after_cut "upload head without any body" "$ASSET_URL"
ok "stalled chunked upload and a head without its body: 408, nothing stored"

note "after all that: a 2 MB upload and download"
random_file "$TEST_TMP/after" 2000000
upload_asset "$MAC" "$TEST_TMP/after" chunked
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"after\",\"recordType\":\"Blob\",\"fields\":{\"data\":$UP_FIELD}}}]}"
expect_item_codes ok "record after the cuts"
asset_get "$MAC" "$(asset_member after data downloadURL)" "$TEST_TMP/after-down"
expect_status 200 "download after the cuts"
expect_same_file "$TEST_TMP/after" "$TEST_TMP/after-down" "download after the cuts"
ok "the server still uploads and downloads"
expect_no_server_errors
baseline=$(asset_counts)

# MARK: uploads and the connection pool

note "a server with --pool-size 4: four uploads that are slow to arrive, then another request"
stop_nimbus >/dev/null
start_nimbus --database-url "$NIMBUS_DB_URL" --pool-size 4 --body-timeout-seconds 30
slow_fds=()
for i in 1 2 3 4; do
  asset_upload_url "$MAC" Blob data
  raw_upload_head "$MAC" "$ASSET_URL_PATH" 1000000
  ( head -c 1000 /dev/urandom >&"$RAW_FD" ) 2>/dev/null
  slow_fds+=("$RAW_FD")
done
sleep 1
start=$(now_ms)
api "$MAC" users/current
took=$(( $(now_ms) - start ))
if [ "$HTTP_STATUS" = 200 ] && [ "$took" -lt 3000 ]; then
  ok "with 4 uploads in progress on a pool of 4, users/current answered 200 in $took ms"
else
  defer_fail "with 4 slow uploads in progress on --pool-size 4, users/current answered $HTTP_STATUS after $took ms ($(json_field serverErrorCode)): each upload holds a pooled connection (in a transaction) while waiting for the client"
fi
for fd in "${slow_fds[@]}"; do exec {fd}>&-; done
RAW_FD=""
wait_open_transactions 0 5 || fail "$OPEN_TX sessions still inside a transaction after the slow uploads' connections closed"
expect_asset_counts "$baseline" "after the slow uploads were cut" 5
finish_scenario
