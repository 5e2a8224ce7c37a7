#!/usr/bin/env bash
# The admin console (docs/console.md) against the real binary:
# - the admin API: 401 without a token, with a wrong one, and with a device token; an admin token
#   works; every mutation (revoke, pair) lands in the audit trail with the admin's name; bad input
#   (unknown user, malformed token id, a body that is not JSON, limit out of range, a device name in
#   use) is a 4xx in the error shape; a revoked admin token is refused at once;
# - the listener: never on the device-facing one (/, /api/* are 404 there), absent with `off`;
# - the data and operations API (records, schema, retention, storage): bad input is a 4xx in the
#   error shape; a prune started from the console is audited and shows as the last prune;
# - every answer, errors included (401, 404, 405, 413 from the HTTP core), carries the console's
#   security headers;
# - the configuration page hides the passwords of both database URLs (a ?password= parameter and
#   a userinfo password; the test cluster trusts local connections, so they are not checked);
# - users named `anna maria` and `jürgen` reach their devices page percent-encoded, and their
#   devices are revoked there.
# The pages themselves are driven in Chromium by scenario 46.
source "$(dirname "$0")/../lib.sh"

NIMBUS_DB_URL=$(fresh_database) || exit 1
start_nimbus --database-url "$NIMBUS_DB_URL&password=q-secret-1" \
  --listen-database-url "${NIMBUS_DB_URL/postgresql:\/\//postgresql://nimbus:u%40secret-2@}"
DEVICE_URL=$NIMBUS_URL
ADMIN=$(admin_url)
nimbus_admin user add anna >/dev/null
issue_token PHONE anna iphone
issue_token MAC anna mac
admin_out=$(nimbus_admin admin token issue ops)
ADMIN_TOKEN=$(printf '%s\n' "$admin_out" | sed -n 's/^token: //p')
ADMIN_TOKEN_ID=$(printf '%s\n' "$admin_out" | sed -n 's/^token-id: //p')
[[ $ADMIN_TOKEN_ID == adm_* ]] && [ -n "$ADMIN_TOKEN" ] || fail "admin token issue printed: $admin_out"

# admin METHOD PATH [TOKEN] [BODY]: a request to the admin listener.
admin() {
  local method=$1 path=$2 token=${3-$ADMIN_TOKEN} body=${4-}
  local args=(-X "$method")
  [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
  HTTP_STATUS=$(curl -sS --max-time 20 -o "$TEST_TMP/admin-body" -D "$TEST_TMP/admin-headers" -w '%{http_code}' "${args[@]}" "$ADMIN$path") \
    || fail "curl $method $ADMIN$path failed"
  HTTP_BODY=$(cat "$TEST_TMP/admin-body")
  HTTP_HEADERS=$(tr -d '\r' <"$TEST_TMP/admin-headers")
}

# expect_console_headers WHAT: the last admin answer carries the console's security headers.
expect_console_headers() {
  local header
  for header in "Content-Security-Policy: default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'" \
                'X-Content-Type-Options: nosniff' 'Referrer-Policy: no-referrer' 'Cache-Control: no-store'; do
    grep -q -i -x -F "$header" <<<"$HTTP_HEADERS" || fail "$1 ($HTTP_STATUS) lacks '$header': $HTTP_HEADERS"
  done
}

# MARK: authentication
admin GET /api/overview ""
expect_api_error 401 AUTHENTICATION_REQUIRED "no admin token"
expect_console_headers "no admin token"
admin GET /api/overview "not-a-token"
expect_api_error 401 AUTHENTICATION_FAILED "a wrong admin token"
admin GET /api/users "$PHONE"
expect_api_error 401 AUTHENTICATION_FAILED "a device token on the admin API"
admin GET /api/overview
expect_status 200 "overview"
expect_json_field reachable true
ok "the admin API needs an admin token: none, a wrong one and a device token are 401"

# MARK: the device listener serves none of it
for path in / /console.js /api/overview /api/users; do
  request GET "$path" -H "Authorization: Bearer $ADMIN_TOKEN"
  expect_status 404 "$path on the device listener"
done
ok "the console and its API are not on the device-facing listener"

# MARK: reads
admin GET /api/users
expect_status 200 users
contains "$HTTP_BODY" -q '"name":"anna"' || fail "users: $HTTP_BODY"
admin GET /api/users/anna/devices
expect_status 200 devices
contains "$HTTP_BODY" -q "\"tokenID\":\"$PHONE_ID\"" || fail "devices: $HTTP_BODY"
admin GET /api/configuration
contains "$HTTP_BODY" -q '"maxOperationsPerRequest":' && contains "$HTTP_BODY" -q '"name":"0011_admin_console"' || fail "configuration: ${HTTP_BODY:0:300}"
contains "$HTTP_BODY" -q "$ADMIN_TOKEN" && fail "the configuration page shows a secret"
contains "$HTTP_BODY" -q 'secret-' && fail "the configuration page shows a database password: $HTTP_BODY"
contains "$HTTP_BODY" -q '&password=hidden"' && contains "$HTTP_BODY" -q 'postgresql://nimbus:hidden@' \
  || fail "the configuration page does not show both database URLs with their passwords hidden: $HTTP_BODY"
expect_console_headers "configuration"
admin GET '/api/requests?limit=5&status=401'
expect_status 200 requests
contains "$HTTP_BODY" -q '"status":401' || true   # device-listener 401s are counted there
contains "$HTTP_BODY" -q "$PHONE" && fail "the request log holds a token"
ok "users, devices, configuration and the request log answer; no secret in them"

# MARK: bad input
admin GET /api/users/nobody/devices
expect_api_error 404 NOT_FOUND "an unknown user"
admin POST /api/devices/revoke "$ADMIN_TOKEN" '{"tokenID":"nope"}'
expect_api_error 400 BAD_REQUEST "a malformed token id"
admin POST /api/devices/revoke "$ADMIN_TOKEN" '{"tokenID":"tok_unknownunknown"}'
expect_api_error 404 NOT_FOUND "an unknown token id"
admin POST /api/devices/revoke "$ADMIN_TOKEN" 'not json'
expect_api_error 400 BAD_REQUEST "a body that is not JSON"
admin GET '/api/audit?limit=0'
expect_api_error 400 BAD_REQUEST "limit 0"
admin GET '/api/audit?limit=501'
expect_api_error 400 BAD_REQUEST "limit over 500"
admin GET '/api/audit?limit=500'
expect_status 200 "limit 500"
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$TEST_TMP/big"
admin POST /api/devices/revoke "$ADMIN_TOKEN" "@$TEST_TMP/big"
expect_api_error 413 LIMIT_EXCEEDED "a 2 MiB body"
expect_console_headers "a 2 MiB body (the HTTP core's answer)"
admin DELETE /api/users
expect_api_error 405 BAD_REQUEST "DELETE"
expect_console_headers "DELETE"
admin GET /api/nothing
expect_api_error 404 NOT_FOUND "an unknown route"
expect_console_headers "an unknown route"
ok "unknown user, malformed and unknown token ids, non-JSON, limits out of range, oversized bodies: 4xx in the error shape, with the security headers"

# MARK: names that need percent-encoding in a path
for name in "anna maria" "jürgen"; do
  nimbus_admin user add "$name" >/dev/null
  issue_token OTHER "$name" phone
  encoded=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$name")
  for page in devices zones; do
    admin GET "/api/users/$encoded/$page"
    expect_status 200 "the $page of $name ($encoded)"
  done
  contains "$HTTP_BODY" -q "\"user\":\"$name\"" || fail "the zones of $encoded name another user: $HTTP_BODY"
  admin POST "/api/users/$encoded/pair" "$ADMIN_TOKEN" '{}'
  expect_status 200 "a pairing code for $name"
  admin POST /api/devices/revoke "$ADMIN_TOKEN" "{\"tokenID\":\"$OTHER_ID\"}"
  expect_status 200 "revoking the phone of $name"
  api "$OTHER" users/current
  expect_api_error 401 AUTHENTICATION_FAILED "the phone of $name, revoked"
done
ok "users named 'anna maria' and 'jürgen' reach their devices, zones and pairing percent-encoded, and their devices are revoked"

# MARK: mutations are audited
admin POST /api/users/anna/pair "$ADMIN_TOKEN" '{}'
expect_status 200 pair
code=$(json_field code) && [[ $code =~ ^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{2}$ ]] || fail "pair: $HTTP_BODY"
contains "$HTTP_BODY" -q '"qrSVG":"<svg' || fail "pair without a QR SVG: ${HTTP_BODY:0:200}"
curl -s -X POST "$DEVICE_URL/devices/enroll" -H 'Content-Type: application/json' --data-binary "{\"code\":\"$code\",\"deviceName\":\"ipad\"}" | grep -q '"token"' \
  || fail "the console's pairing code does not enroll on the device listener"
admin POST /api/devices/revoke "$ADMIN_TOKEN" "{\"tokenID\":\"$MAC_ID\"}"
expect_status 200 revoke
api "$MAC" users/current
expect_api_error 401 AUTHENTICATION_FAILED "the revoked device's next request"
admin GET /api/audit
contains "$HTTP_BODY" -q "\"action\":\"device.revoke\"" && contains "$HTTP_BODY" -q "\"target\":\"$MAC_ID\"" || fail "audit lacks the revoke: $HTTP_BODY"
contains "$HTTP_BODY" -q '"action":"device.pair"' && contains "$HTTP_BODY" -q '"adminName":"ops"' || fail "audit lacks the pairing: $HTTP_BODY"
ok "pairing and revoking through the admin API work and are audited with the admin's name"

# MARK: the data and operations pages' API
api_ok "$PHONE" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"r1","recordType":"Note","fields":{"title":{"value":"hello"}}}}]}'
admin GET /api/users/anna/zones
expect_status 200 zones
contains "$HTTP_BODY" -q '"zoneName":"_defaultZone"' || fail "zones: $HTTP_BODY"
admin GET '/api/records?user=anna&container=iCloud.com.mirxa.AppLocker&environment=development&zoneName=_defaultZone&limit=200'
expect_status 200 "records, limit 200"
admin GET '/api/records?user=anna&container=iCloud.com.mirxa.AppLocker&environment=development&zoneName=_defaultZone&limit=201'
expect_api_error 400 BAD_REQUEST "records, limit 201"
admin GET '/api/records?user=nobody&container=iCloud.com.mirxa.AppLocker&environment=development&zoneName=_defaultZone'
expect_api_error 404 NOT_FOUND "records of an unknown user"
admin GET '/api/records?user=anna&container=iCloud.com.mirxa.AppLocker&environment=development&zoneName=NoSuchZone'
expect_api_error 404 ZONE_NOT_FOUND "records of an unknown zone"
admin GET '/api/records?user=anna&container=..&environment=development&zoneName=_defaultZone'
expect_api_error 400 BAD_REQUEST "a malformed container"
admin GET '/api/records?user=anna&container=iCloud.com.mirxa.AppLocker&environment=staging&zoneName=_defaultZone'
expect_api_error 400 BAD_REQUEST "an unknown environment"
admin GET '/api/records?user=anna'
expect_api_error 400 BAD_REQUEST "records without a zone"
delete_body='{"user":"anna","container":"iCloud.com.mirxa.AppLocker","environment":"development","zoneName":"_defaultZone","recordName":"r1"'
admin POST /api/records/delete "$ADMIN_TOKEN" "$delete_body}"
expect_api_error 400 BAD_REQUEST "a delete without the typed confirmation"
admin POST /api/records/delete "$ADMIN_TOKEN" "$delete_body,\"confirm\":\"r2\"}"
expect_api_error 400 BAD_REQUEST "a delete whose confirmation names another record"
admin POST /api/retention/runs "$ADMIN_TOKEN" '{"dryRun":"yes"}'
expect_api_error 400 BAD_REQUEST "a run whose dryRun is not a boolean"
admin POST /api/schema/import "$ADMIN_TOKEN" '{"container":"iCloud.x","recordTypes":{"T":{"fields":{"f":"NOPE"}}}}'
expect_api_error 400 BAD_REQUEST "a schema file with an unknown field type"
admin POST '/api/schema/import?environment=staging' "$ADMIN_TOKEN" '{"container":"iCloud.x","recordTypes":{}}'
expect_api_error 400 BAD_REQUEST "a schema import into an unknown environment"
admin POST /api/schema/deploy "$ADMIN_TOKEN" '{"container":"iCloud.com.nothing.Here"}'
expect_api_error 404 NOT_FOUND "deploying a container with no development schema"
admin POST /api/schema/deploy "$ADMIN_TOKEN" "@$TEST_TMP/big"
expect_api_error 413 LIMIT_EXCEEDED "a 2 MiB schema body"
admin POST /api/users/anna/tokens "$ADMIN_TOKEN" '{"deviceName":""}'
expect_api_error 400 BAD_REQUEST "a device token with an empty name"
admin POST /api/users/anna/tokens "$ADMIN_TOKEN" '{}'
expect_api_error 400 BAD_REQUEST "a device token without a name"
admin POST /api/users/nobody/tokens "$ADMIN_TOKEN" '{"deviceName":"ipad"}'
expect_api_error 404 NOT_FOUND "a device token for an unknown user"
admin POST /api/users/anna/tokens "$ADMIN_TOKEN" '{"deviceName":"watch"}'
expect_status 200 "a device token from the console"
issued=$(json_field token)
api_ok "$issued" users/current
admin POST /api/users/anna/tokens "$ADMIN_TOKEN" '{"deviceName":"watch"}'
expect_api_error 400 BAD_REQUEST "a second live device named watch"
json_field reason | grep -q 'watch.* is already the name of one of this user' || fail "the name in use is not named: $HTTP_BODY"
admin GET /api/audit
contains "$HTTP_BODY" -q '"action":"device.issue"' || fail "the audit lacks the issued token: $HTTP_BODY"
asset_query='user=anna&container=iCloud.com.mirxa.AppLocker&environment=development'
admin GET "/api/assets?$asset_query&fileChecksum=nope&size=3"
expect_api_error 400 BAD_REQUEST "an asset download with a malformed checksum"
admin GET "/api/assets?$asset_query&fileChecksum=47DEQpj8HBSa%2B%2FTImW%2B5JCeuQeRkm5NMpJWZG3hSuFU%3D&size=0"
expect_api_error 404 NOT_FOUND "an asset that was never uploaded"
admin GET "/api/assets?$asset_query&fileChecksum=47DEQpj8HBSa%2B%2FTImW%2B5JCeuQeRkm5NMpJWZG3hSuFU%3D&size=99999999999"
expect_api_error 400 BAD_REQUEST "an asset larger than maxAssetBytes"
for path in /api/retention /api/storage /api/schema /api/retention/runs/current; do
  admin GET "$path"
  expect_status 200 "$path"
done
admin POST /api/retention/runs "$ADMIN_TOKEN" '{"dryRun":false}'
expect_status 200 "a prune from the console"
for _ in $(seq 1 100); do
  admin GET /api/retention/runs/current
  contains "$HTTP_BODY" -q '"finishedAt":null' || break
  sleep 0.1
done
contains "$HTTP_BODY" -q '"report":' || fail "the console's prune did not finish with a report: $HTTP_BODY"
admin GET /api/overview
contains "$HTTP_BODY" -q '"lastPrune":{"at":' || fail "the overview does not show the console's prune as the last: $HTTP_BODY"
admin GET /api/audit
contains "$HTTP_BODY" -q '"action":"retention.prune"' || fail "the audit lacks the prune: $HTTP_BODY"
ok "records, schema, retention and storage: bad input is a 4xx in the error shape; a prune is audited and becomes the overview's last prune"

expect_no_server_errors

# MARK: off
stop_nimbus
NIMBUS_ADMIN_LISTEN=off start_nimbus --database-url "$NIMBUS_DB_URL"
grep -a -q 'admin listener disabled' "$NIMBUS_LOG" || fail "with off, the log does not say the admin listener is disabled"
grep -a -q 'admin console on' "$NIMBUS_LOG" && fail "with off, an admin listener started"
ok "--admin-listen off starts no admin listener"

finish_scenario
