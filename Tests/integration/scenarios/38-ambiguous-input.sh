#!/usr/bin/env bash
# docs/api.md "Ambiguous input is refused, never guessed" (the seams issue), against the real binary:
# containers of dots, a record zoneID contradicting the request's, TIMESTAMPs with a fraction,
# untyped integers outside 64 bits, seconds-looking TIMESTAMPs in a retention field, two
# Authorization fields, absolute-form authorities, and a non-matching If-Range.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add ada >/dev/null
issue_token MAC ada mac
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" --environment development >/dev/null
API_CONTAINER=iCloud.com.mirxa.AppLocker

# MARK: containers made only of dots
for container in ... .... ..; do
  request POST "/database/1/$container/development/private/records/query" --path-as-is -H "Authorization: Bearer $MAC" \
    -H 'Content-Type: application/json' --data-binary '{"query":{"recordType":"Note"}}'
  expect_api_error 400 BAD_REQUEST "container '$container'"
done
ok "containers made only of dots are BAD_REQUEST"

# MARK: a record zoneID contradicting the request's
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Work"}}}]}'
api_ok "$MAC" records/modify '{"zoneID":{"zoneName":"Work"},"operations":[
  {"operationType":"create","record":{"recordName":"z1","recordType":"Note","zoneID":{"zoneName":"_defaultZone"},"fields":{"t":{"value":"a"}}}},
  {"operationType":"create","record":{"recordName":"z2","recordType":"Note","zoneID":{"zoneName":"Work"},"fields":{"t":{"value":"b"}}}},
  {"operationType":"create","record":{"recordName":"z3","recordType":"Note","fields":{"t":{"value":"c"}}}}]}'
expect_item_codes "BAD_REQUEST ok ok" "zoneID contradiction"
contains "$HTTP_BODY" -a -q 'names zone _defaultZone, but the request is for zone Work' || fail "the reason does not name both zones: $HTTP_BODY"
api_ok "$MAC" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"z4","recordType":"Note","zoneID":{"zoneName":"Work"},"fields":{"t":{"value":"d"}}}}]}'
expect_item_codes "BAD_REQUEST" "a record zoneID without a request zoneID"
api_ok "$MAC" records/lookup '{"zoneID":{"zoneName":"_defaultZone"},"records":[{"recordName":"z1"}]}'
expect_item_codes "NOT_FOUND" "the refused record was not written"
ok "a record whose zoneID contradicts the request's is a BAD_REQUEST item; the others are written"

# MARK: TIMESTAMP fractions, untyped integers past 64 bits
api_ok "$MAC" records/modify '{"operations":[
  {"operationType":"create","record":{"recordName":"t1","recordType":"Note","fields":{"when":{"value":1795000000000.5,"type":"TIMESTAMP"}}}},
  {"operationType":"create","record":{"recordName":"t2","recordType":"Note","fields":{"big":{"value":18446744073709551615}}}},
  {"operationType":"create","record":{"recordName":"t3","recordType":"Note","fields":{"when":{"value":1795000000000,"type":"TIMESTAMP"},"big2":{"value":9223372036854775807}}}}]}'
expect_item_codes "BAD_REQUEST BAD_REQUEST ok" "fractions and big integers"
contains "$HTTP_BODY" -a -q 'whole milliseconds' || fail "the TIMESTAMP reason does not say whole milliseconds: $HTTP_BODY"
contains "$HTTP_BODY" -a -q 'outside 64 bits' || fail "the integer reason does not say outside 64 bits: $HTTP_BODY"
ok "a TIMESTAMP with a fraction and an untyped integer outside 64 bits are BAD_REQUEST items"

# MARK: seconds in a retention field
now_s=$(date +%s)
api_ok "$MAC" records/modify "{\"operations\":[
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"s1\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"Safari\"},\"timestamp\":{\"value\":$now_s}}}},
  {\"operationType\":\"create\",\"record\":{\"recordName\":\"s2\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"Safari\"},\"timestamp\":{\"value\":${now_s}000}}}}]}"
expect_item_codes "BAD_REQUEST ok" "a retention TIMESTAMP in seconds"
contains "$HTTP_BODY" -a -q 'milliseconds since 1970' || fail "the reason does not say milliseconds since 1970: $HTTP_BODY"
ok "a seconds-looking TIMESTAMP in a retention field is a BAD_REQUEST item saying TIMESTAMPs are milliseconds"

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
