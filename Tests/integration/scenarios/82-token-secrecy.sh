#!/usr/bin/env bash
# Bearer tokens (issue 7, security): raw tokens are never stored or logged, revocation is
# immediate, and 401 answers challenge as RFC 6750 says.
#
# - Tokens are issued, then used on every kind of route (database operations, a long-poll, an
#   asset upload and download, a notification channel), and wrong, malformed and revoked tokens
#   are sent too. Then the database is dumped with pg_dump and the dump, the server's log, the
#   CLI's `token list` / `user list` output and /metrics are searched for every raw token (as
#   text and as the hex of its bytes, the form a bytea column would show): 0 hits.
# - A revoked token is refused on the very next request on every route (no cache window), while
#   the same user's other token keeps working, and a request parked before the revocation ends
#   normally.
# - Pairing codes (from POST /devices/pair and `nimbus device pair`) and the token a code enrolls
#   are searched for the same way (docs/api.md "Devices": only their SHA-256 is stored).
# - 401 challenges (RFC 6750 §3): no credentials at all → `WWW-Authenticate: Bearer` without an
#   error code (§3.1: "the resource server SHOULD NOT include an error code"), AUTHENTICATION_REQUIRED;
#   an unknown, revoked or malformed token (or another scheme) → `Bearer error="invalid_token"`,
#   AUTHENTICATION_FAILED. docs/api.md answers a malformed header with 401 rather than §3.1's 400
#   `invalid_request`, so it carries `invalid_token` as well.
source "$(dirname "$0")/../lib.sh"

# The most verbose log level: whatever the server can log is searched.
start_store_server --requests-per-second-per-token 0 --log-level debug
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
issue_token MAC alice mac
issue_token PHONE alice phone
issue_token BOB bob mac
RAW_TOKENS=("$MAC" "$PHONE" "$BOB")

# A token that never existed, of the same shape as real ones, and variants of the real ones.
WRONG=$(forged=${MAC:0:10}; printf '%s%s' "$forged" "$(printf '%s' "${MAC:10}" | tr 'A-Za-z' 'N-ZA-Mn-za-m')")
RAW_TOKENS+=("$WRONG")

note "tokens in use on every kind of route"
api_ok "$MAC" users/current
api_ok "$PHONE" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"n1","recordType":"Note","fields":{"text":{"value":"hello"}}}}]}'
api_ok "$BOB" zones/list
api_ok "$MAC" tokens/create '{}'
CHANNEL=$(json_field webcourierURL) && CHANNEL=${CHANNEL#"$NIMBUS_URL"}
request GET "$CHANNEL" -H "Authorization: Bearer $PHONE"
expect_status 200 "phone polls the channel"
random_file "$TEST_TMP/blob" 5000
upload_asset "$MAC" "$TEST_TMP/blob"
api_ok "$MAC" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"b1","recordType":"Blob","fields":{"data":'"$UP_FIELD"'}}}]}'
DOWNLOAD=$(asset_member b1 data downloadURL) || fail "no downloadURL: $HTTP_BODY"
asset_get "$PHONE" "$DOWNLOAD" "$TEST_TMP/down"
expect_status 200 "phone downloads"
api_ok "$MAC" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
ZONE_TOKEN=$(json_last_field syncToken)
ok "mac, phone and bob's tokens work on database operations, channels, uploads and downloads"

note "401 challenges on every authenticated route"
DB_PATH=$(api_path users/current)
UPLOAD_PATH=/assets/1/upload/no-such-upload
declare -A ROUTES=([database]="GET $DB_PATH" [channel]="GET $CHANNEL" [download]="GET ${DOWNLOAD#"$NIMBUS_URL"}" [upload]="POST $UPLOAD_PATH")
challenges=0
# expect_challenge WHAT CODE CHALLENGE: the last answer is 401 CODE with exactly this WWW-Authenticate.
expect_challenge() {
  expect_api_error 401 "$2" "$1"
  expect_header WWW-Authenticate "$3"
  challenges=$((challenges + 1))
}
for route in "${!ROUTES[@]}"; do
  read -r method path <<<"${ROUTES[$route]}"
  data=()
  [ "$method" = POST ] && data=(--data-binary x)
  request "$method" "$path" "${data[@]}"
  expect_challenge "$route without credentials" AUTHENTICATION_REQUIRED 'Bearer'
  request "$method" "$path" "${data[@]}" -H "Authorization: Bearer $WRONG"
  expect_challenge "$route with an unknown token" AUTHENTICATION_FAILED 'Bearer error="invalid_token"'
  request "$method" "$path" "${data[@]}" -H "Authorization: Basic $(printf 'alice:%s' "$MAC" | base64 -w0)"
  expect_challenge "$route with Basic credentials" AUTHENTICATION_FAILED 'Bearer error="invalid_token"'
  request "$method" "$path" "${data[@]}" -H "Authorization: Bearer $MAC extra"
  expect_challenge "$route with a malformed Bearer header" AUTHENTICATION_FAILED 'Bearer error="invalid_token"'
  request "$method" "$path" "${data[@]}" -H "Authorization: Bearer ${MAC}x"
  expect_challenge "$route with a token one character too long" AUTHENTICATION_FAILED 'Bearer error="invalid_token"'
done
# The scheme is case-insensitive (RFC 9110 §11.1): `bearer` works.
request GET "$DB_PATH" -H "Authorization: bearer $MAC"
expect_status 200 "lower-case bearer scheme"
ok "$challenges 401 answers: no credentials → 'Bearer', anything else → 'Bearer error=\"invalid_token\"'"

note "revocation takes effect on the very next request"
lp_start parked "$PHONE" records/changes '{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"'"$ZONE_TOKEN"'","wait":3}'
wait_metric nimbus_longpoll_waiters 1 10 || fail "the phone's long-poll did not park (waiters $LP_METRIC)"
api_ok "$PHONE" users/current
nimbus_admin token revoke "$PHONE_ID" >/dev/null
revoked=0
for route in "${!ROUTES[@]}"; do
  read -r method path <<<"${ROUTES[$route]}"
  data=()
  [ "$method" = POST ] && data=(--data-binary x)
  request "$method" "$path" "${data[@]}" -H "Authorization: Bearer $PHONE"
  expect_challenge "$route with the revoked token" AUTHENTICATION_FAILED 'Bearer error="invalid_token"'
  revoked=$((revoked + 1))
done
api "$PHONE" records/modify '{"operations":[{"operationType":"forceDelete","record":{"recordName":"n1"}}]}'
expect_challenge "records/modify with the revoked token" AUTHENTICATION_FAILED 'Bearer error="invalid_token"'
api_ok "$MAC" records/lookup '{"records":[{"recordName":"n1"}]}'
expect_item_codes ok "n1 survives the revoked token's delete"
# records/changes also starts from the cached session and checks the token in its statement.
api "$PHONE" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
expect_challenge "records/changes (a valid request) with the revoked token" AUTHENTICATION_FAILED 'Bearer error="invalid_token"'
api_ok "$MAC" users/current
lp_finish parked 15
[ "$LP_STATUS" = 200 ] || fail "the long-poll parked before the revocation answered $LP_STATUS"
# Revoking, a second time, then using at once, in a tight loop: never a success after revoke.
for i in 1 2 3 4 5; do
  issue_token TEMP alice "temp$i"
  RAW_TOKENS+=("$TEMP")
  api_ok "$TEMP" users/current
  nimbus_admin token revoke "$TEMP_ID" >/dev/null
  api "$TEMP" users/current
  expect_challenge "temp token $i right after its revocation" AUTHENTICATION_FAILED 'Bearer error="invalid_token"'
  revoked=$((revoked + 1))
done
ok "$revoked requests with just-revoked tokens: all 401; the user's other token and an earlier long-poll unaffected"

note "pairing codes and the tokens they enroll are secrets too"
request POST /devices/pair -H "Authorization: Bearer $MAC" --data-binary '{"deviceName":"tablet"}'
expect_status 200 "POST /devices/pair"
PAIR_CODE=$(json_field code)
request POST /devices/enroll -H 'Content-Type: application/json' --data-binary "{\"code\":\"$PAIR_CODE\",\"deviceName\":\"tablet\"}"
expect_status 200 "POST /devices/enroll"
ENROLLED=$(json_field token)
api_ok "$ENROLLED" users/current
CLI_CODE=$(nimbus_admin device pair alice --no-qr | sed -n 's/^code: //p')
[ -n "$CLI_CODE" ] || fail "nimbus device pair printed no code"
RAW_TOKENS+=("$ENROLLED" "${PAIR_CODE//-/}" "$PAIR_CODE" "${CLI_CODE//-/}" "$CLI_CODE")
ok "a code from the API, a code from the CLI and an enrolled token join the secrets searched for"

note "raw tokens in the database, the log, the CLI and /metrics"
"$NIMBUS_TEST_PG_BIN/pg_dump" --no-owner "$NIMBUS_DB_URL" >"$TEST_TMP/dump.sql" || fail "pg_dump failed"
[ "$(grep -c 'device_tokens' "$TEST_TMP/dump.sql")" -gt 0 ] || fail "the dump has no device_tokens table"
rows=$(psql_db "SELECT count(*) FROM device_tokens")
[ "$rows" -ge 8 ] || fail "device_tokens has $rows rows, expected at least 8"
nimbus_admin token list alice >"$TEST_TMP/cli.txt"
nimbus_admin token list bob >>"$TEST_TMP/cli.txt"
nimbus_admin user list >>"$TEST_TMP/cli.txt"
grep -q "$PHONE_ID" "$TEST_TMP/cli.txt" || fail "token list does not show the phone's token id: $(cat "$TEST_TMP/cli.txt")"
curl -s --max-time 10 "$NIMBUS_URL/metrics" >"$TEST_TMP/metrics.txt"
hits=0 searched=0
for token in "${RAW_TOKENS[@]}"; do
  hex=$(printf '%s' "$token" | od -An -tx1 | tr -d ' \n')
  for place in "$TEST_TMP/dump.sql" "$NIMBUS_LOG" "$TEST_TMP/cli.txt" "$TEST_TMP/metrics.txt"; do
    searched=$((searched + 1))
    for needle in "$token" "$hex" "${token:0:24}"; do
      if grep -a -q -i -F -- "$needle" "$place"; then
        hits=$((hits + 1))
        fail_later "a raw token (${token:0:6}…) is in $(basename "$place") as '${needle:0:12}…'"
      fi
    done
  done
done
# The digest the server keeps is the SHA-256 of the token, nothing reversible.
digest=$(printf '%s' "$MAC" | sha256sum | cut -c1-64)
grep -a -q "$digest" "$TEST_TMP/dump.sql" || fail "the dump does not hold the mac token's SHA-256 ($digest): is the digest stored some other way?"
echo "tokens: ${#RAW_TOKENS[@]} raw tokens × 4 places (pg_dump $(wc -l <"$TEST_TMP/dump.sql") lines, debug log $(wc -l <"$NIMBUS_LOG") lines, CLI output, /metrics), $searched searches, $hits hits"
[ "$hits" -eq 0 ] || fail "$hits raw-token hits"
ok "no raw token in the database dump, the log, the CLI output or /metrics; the dump holds SHA-256 digests"
expect_no_server_errors
