#!/usr/bin/env bash
# docs/api.md "Ambiguous input is refused, never guessed", the parts that need the real binary and
# raw bytes: two Authorization fields, absolute-form authorities, and a non-matching If-Range.
# The record rules (containers of dots, contradicting zoneIDs, TIMESTAMP fractions and seconds,
# integers past 64 bits) are in-process API tests: Tests/NimbusAPITests/RecordRulesTests.swift.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add ada >/dev/null
issue_token MAC ada mac

# MARK: HTTP: two Authorization fields, absolute-form authorities
request GET /limits -H "Authorization: Bearer a" -H "Authorization: Bearer b"
expect_api_error 400 BAD_REQUEST "two Authorization fields"
for target in "http:///limits" "http://a@b@c/limits" "http://user@h/limits"; do
  raw=$(printf 'GET %s HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n' "$target" | curl -s --max-time 5 telnet://127.0.0.1:"$NIMBUS_PORT" 2>/dev/null | head -1 | tr -d '\r')
  [[ $raw == "HTTP/1.1 400"* ]] || fail "absolute-form $target: expected 400, got '$raw'"
done
api_ok "$MAC" tokens/create '{}'
curl -s --max-time 5 --request-target "http://sync.example.org:8443$(api_path tokens/create)" -X POST -H "Host: other.example" \
  -H "Authorization: Bearer $MAC" -H 'Content-Type: application/json' --data-binary '{}' "$NIMBUS_URL" >"$TEST_TMP/abs.json"
grep -a -q '"webcourierURL":"http://sync.example.org:8443/webcourier/' "$TEST_TMP/abs.json" \
  || fail "the absolute-form authority is not used for absolute URLs: $(cat "$TEST_TMP/abs.json")"
ok "two Authorization fields are 400; absolute-form authorities obey the Host rules and build absolute URLs"

# MARK: If-Range
blob="$TEST_TMP/blob.bin"
head -c 5000 /dev/urandom >"$blob"
upload_asset "$MAC" "$blob" length Note photo
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"p1\",\"recordType\":\"Note\",\"fields\":{\"photo\":$UP_FIELD}}}]}"
url=$(asset_member p1 photo downloadURL) || fail "no downloadURL: $HTTP_BODY"
etag="\"$UP_CHECKSUM\""
asset_get "$MAC" "$url" "$TEST_TMP/r1" -H "Range: bytes=0-99" -H "If-Range: $etag"
[ "$HTTP_STATUS" = 206 ] || fail "a matching If-Range: expected 206, got $HTTP_STATUS"
asset_get "$MAC" "$url" "$TEST_TMP/r2" -H "Range: bytes=0-99" -H 'If-Range: "not-the-etag"'
[ "$HTTP_STATUS" = 200 ] || fail "a non-matching If-Range: expected 200, got $HTTP_STATUS"
cmp -s "$blob" "$TEST_TMP/r2" || fail "a non-matching If-Range did not get the whole body"
asset_get "$MAC" "$url" "$TEST_TMP/r3" -H "Range: bytes=0-99" -H 'If-Range: Tue, 24 Nov 2026 10:00:00 GMT'
[ "$HTTP_STATUS" = 200 ] || fail "an If-Range date: expected 200, got $HTTP_STATUS"
ok "If-Range: the current ETag gives 206, anything else the whole body (200)"

finish_scenario
