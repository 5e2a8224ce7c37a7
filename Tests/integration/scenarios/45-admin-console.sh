#!/usr/bin/env bash
# The admin console (docs/console.md) against the real binary:
# - the admin API: 401 without a token, with a wrong one, and with a device token; an admin token
#   works; every mutation (revoke, pair) lands in the audit trail with the admin's name; bad input
#   (unknown user, malformed token id, a body that is not JSON, limit out of range) is a 4xx in the
#   error shape; a revoked admin token is refused at once;
# - the listener: never on the device-facing one (/, /api/* are 404 there), absent with `off`;
# - the page in headless Chromium (Debian's `chromium`): every page renders with no console error
#   under its Content-Security-Policy; the devices page shows a device and revoking it from the
#   page makes its token fail. A screenshot of each page is kept under the scenario's output.
source "$(dirname "$0")/../lib.sh"

start_store_server
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

# MARK: authentication
admin GET /api/overview ""
expect_api_error 401 AUTHENTICATION_REQUIRED "no admin token"
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
admin DELETE /api/users
expect_api_error 405 BAD_REQUEST "DELETE"
ok "unknown user, malformed and unknown token ids, non-JSON, limits out of range, oversized bodies: 4xx in the error shape"

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

# MARK: headless Chromium
if command -v chromium >/dev/null; then
  shots="$REPO_DIR/Tests/integration/out/console"
  mkdir -p "$shots"
  # page NAME HASH: renders the page (the token handed over in the fragment, as automation may),
  # keeps its DOM and a screenshot, and fails on any console error the page logged.
  page() {
    local name=$1 hash=$2 profile="$TEST_TMP/chromium-$1"
    timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" \
      --enable-logging=stderr --v=0 --virtual-time-budget=4000 --window-size=1280,900 \
      --dump-dom "$ADMIN/#/$hash?token=$ADMIN_TOKEN" >"$TEST_TMP/$name.html" 2>"$TEST_TMP/$name.log" || fail "chromium on $name: $(tail -5 "$TEST_TMP/$name.log")"
    timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile-shot" \
      --virtual-time-budget=4000 --window-size=1280,900 --screenshot="$shots/$name.png" "$ADMIN/#/$hash?token=$ADMIN_TOKEN" \
      >/dev/null 2>&1 || fail "chromium screenshot of $name failed"
    if grep -a -E 'CONSOLE.*(Uncaught|Error|Refused)|Content Security Policy' "$TEST_TMP/$name.log" >/dev/null; then
      fail "the $name page logged errors: $(grep -a -E 'CONSOLE|Content Security' "$TEST_TMP/$name.log" | head -5)"
    fi
    grep -a -q "data-page=\"${hash%%/*}\"" "$TEST_TMP/$name.html" || fail "the $name page did not render: $(head -c 600 "$TEST_TMP/$name.html")"
  }
  page overview overview
  grep -a -q 'Database round trip' "$TEST_TMP/overview.html" && grep -a -q '<svg class="chart"' "$TEST_TMP/overview.html" \
    || fail "overview without its figures or chart"
  page users users
  page devices users/anna
  grep -a -q "$PHONE_ID" "$TEST_TMP/devices.html" || fail "the devices page does not list $PHONE_ID"
  grep -a -q "data-revoke=\"$PHONE_ID\"" "$TEST_TMP/devices.html" || fail "no revoke button for $PHONE_ID"
  page requests requests
  page audit audit
  grep -a -q 'device.revoke' "$TEST_TMP/audit.html" || fail "the audit page does not show the revoke"
  page configuration configuration
  ok "every console page renders in headless Chromium with no console error; screenshots in $shots"
else
  note "chromium is not installed: the browser part is skipped (Tests/run.sh installs it)"
fi

expect_no_server_errors

# MARK: off
stop_nimbus
NIMBUS_ADMIN_LISTEN=off start_nimbus --database-url "$NIMBUS_DB_URL"
grep -a -q 'admin listener disabled' "$NIMBUS_LOG" || fail "with off, the log does not say the admin listener is disabled"
grep -a -q 'admin console on' "$NIMBUS_LOG" && fail "with off, an admin listener started"
ok "--admin-listen off starts no admin listener"

finish_scenario
