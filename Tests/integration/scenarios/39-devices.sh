#!/usr/bin/env bash
# Devices (docs/api.md "Devices"), the parts that need the real binary: the CLI, two instances of
# it on one database, real client addresses, /metrics and what lands in dumps and logs. (The
# domain rules — single-use codes, one answer for wrong and used codes, bad input that creates
# nothing, the cap of pending codes, GET /devices and revocation — are in-process:
# Tests/NimbusAPITests/DeviceTests.swift and EnrollmentTests.swift.)
#
# - `nimbus device pair` prints code, expiry, pairing URL and a QR code that zbarimg decodes back to
#   the URL (the printed terminal drawing, turned into an image).
# - Pair on the shell, enroll on instance B: the new token works at once on A and shows in `token
#   list`; `token issue` refuses a name in use as enrollment does; an oversized enroll body is 413.
# - Brute force: enrollFailuresPerMinutePerAddress wrong codes from 127.0.0.2, then the next is 429
#   with retryAfter; a correct code from 127.0.0.3 still works; the server-wide cap then refuses
#   every address, a correct code included, on both instances (one count in the database).
# - A revocation through A answers 401 on B; `device list` shows it.
source "$(dirname "$0")/../lib.sh"

PER_ADDRESS=4 OVERALL=9
start_store_server --enroll-failures-per-minute-per-address "$PER_ADDRESS" --enroll-failures-per-minute "$OVERALL" \
  --max-pending-pairing-codes 3
A_URL=$NIMBUS_URL
start_nimbus --database-url "$NIMBUS_DB_URL" --enroll-failures-per-minute-per-address "$PER_ADDRESS" \
  --enroll-failures-per-minute "$OVERALL" --max-pending-pairing-codes 3
B_URL=$NIMBUS_URL
NIMBUS_URL=$A_URL
nimbus_admin user add alice >/dev/null

tokens() { psql_db "SELECT count(*) FROM device_tokens"; }

note "nimbus device pair: code, expiry, URL and a QR code a real decoder reads"
output=$(nimbus_admin device pair alice --device-name "alice's mac" --server "$A_URL")
CODE=$(printf '%s\n' "$output" | sed -n 's/^code: //p')
URL=$(printf '%s\n' "$output" | sed -n 's/^pairing-url: //p')
EXPIRES=$(printf '%s\n' "$output" | sed -n 's/^expires: //p')
[[ $CODE =~ ^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{2}$ ]] || fail "code line: $output"
[[ $EXPIRES =~ ^20[0-9][0-9]-.*Z$ ]] || fail "expires line is not ISO 8601: $EXPIRES"
expected_url="nimbus://pair?server=$(printf '%s' "$A_URL" | sed 's/:/%3A/g; s|/|%2F|g')&code=${CODE//-/}"
[ "$URL" = "$expected_url" ] || fail "pairing-url $URL, expected $expected_url"
printf '%s\n' "$output" | sed -n '/^$/,$p' | sed '1d' >"$TEST_TMP/qr.txt"
python3 - "$TEST_TMP/qr.txt" "$TEST_TMP/qr.pgm" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().rstrip("\n").split("\n")
rows = []
for line in lines:  # two module rows per line; a drawn (light) half is a light module
    rows.append([c in "█▀" for c in line])
    rows.append([c in "█▄" for c in line])
scale, width = 4, max(len(r) for r in rows)
with open(sys.argv[2], "wb") as out:
    out.write(b"P5\n%d %d\n255\n" % (width * scale, len(rows) * scale))
    for r in rows:
        line = bytes(255 if (x < len(r) and r[x]) else 0 for x in range(width) for _ in range(scale))
        out.write(line * scale)
PY
decoded=$(zbarimg --quiet --raw "$TEST_TMP/qr.pgm") || fail "zbarimg could not read the printed QR code"
[ "$decoded" = "$URL" ] || fail "the QR code decodes to '$decoded', not the pairing URL '$URL'"
ok "device pair printed $CODE (expires $EXPIRES) and a QR code that zbarimg decodes to the pairing URL"
nimbus_admin device pair alice --no-qr --server "$A_URL" | grep -q '█' && fail "--no-qr still drew a QR code"

note "enroll on instance B with a code paired on the shell; the token works at once"
before=$(tokens)
NIMBUS_URL=$B_URL request POST /devices/enroll -H 'Content-Type: application/json' \
  --data-binary "{\"code\":\"$(printf '%s' "$CODE" | tr 'A-Z' 'a-z' | sed 's/-/ /')\",\"deviceName\":\"alice's mac\"}"
expect_status 200 "enroll with the code in lower case with a space"
MAC=$(json_field token) MAC_ID=$(json_field tokenID)
[ -n "$MAC" ] && [[ $MAC_ID == tok_* ]] || fail "enroll answered $HTTP_BODY"
expect_json_field deviceName "alice's mac"
api_ok "$MAC" users/current
[ "$(tokens)" = $((before + 1)) ] || fail "device_tokens grew by $(( $(tokens) - before )), expected 1"
nimbus_admin token list alice | grep -q "$MAC_ID" || fail "token list alice does not show $MAC_ID"
"$NIMBUS_BIN" token issue alice --device "alice's mac" --database-url "$NIMBUS_DB_URL" >/dev/null 2>"$TEST_TMP/issue-err" \
  && fail "token issue made a second live \"alice's mac\""
grep -q "\"alice's mac\" is already the name of one of this user's devices" "$TEST_TMP/issue-err" \
  || fail "token issue with a name in use said: $(cat "$TEST_TMP/issue-err")"
ok "enrolled on B; the token answers users/current on A and shows in token list"

note "an enrolled device pairs the next one (enrolled on A); an oversized enroll body is 413"
request POST /devices/pair -H "Authorization: Bearer $MAC" -H 'Content-Type: application/json' --data-binary '{"deviceName":"iphone"}'
expect_status 200 "POST /devices/pair"
PHONE_CODE=$(json_field code)
request POST /devices/enroll -H 'Content-Type: application/json' --data-binary "{\"code\":\"$PHONE_CODE\",\"deviceName\":\"iphone\"}"
expect_status 200 "enroll the phone"
PHONE=$(json_field token) PHONE_ID=$(json_field tokenID)
api_ok "$PHONE" users/current
before=$(tokens)
head -c $((9 * 1024 * 1024)) /dev/zero | tr '\0' 'x' >"$TEST_TMP/big"
request POST /devices/enroll -H 'Content-Type: application/json' --data-binary @"$TEST_TMP/big"
expect_api_error 413 LIMIT_EXCEEDED "an oversized enroll body"
[ "$(tokens)" = "$before" ] || fail "an oversized enrollment created a token"
ok "the phone enrolled with a code its mac asked for; a 9 MiB enroll body: 413, nothing created"

note "brute force: per address, then for the whole server"
nimbus_admin user add carol >/dev/null
CAROL_CODE=$(nimbus_admin device pair carol --no-qr | sed -n 's/^code: //p')
CAROL_CODE2=$(nimbus_admin device pair carol --no-qr | sed -n 's/^code: //p')
# enroll_from ADDRESS CODE NAME: prints the status, the body goes to $TEST_TMP/enroll.
enroll_from() {
  curl -s --max-time 20 --interface "$1" -o "$TEST_TMP/enroll" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary "{\"code\":\"$2\",\"deviceName\":\"$3\"}" "$NIMBUS_URL/devices/enroll"
}
for i in $(seq 1 "$PER_ADDRESS"); do
  [ "$(enroll_from 127.0.0.2 "ZZZZ-ZZZZ-Z$i" x)" = 401 ] || fail "wrong code $i from 127.0.0.2 was not 401"
done
[ "$(enroll_from 127.0.0.2 "$CAROL_CODE" carol-phone)" = 429 ] || fail "attempt $((PER_ADDRESS + 1)) from 127.0.0.2 was not 429: $(cat "$TEST_TMP/enroll")"
HTTP_BODY=$(cat "$TEST_TMP/enroll")
expect_error_body THROTTLED
retry=$(json_field retryAfter)
(( retry >= 1 && retry <= 60 )) || fail "retryAfter $retry is not 1..60"
[ "$(enroll_from 127.0.0.3 "$CAROL_CODE" carol-phone)" = 200 ] || fail "a correct code from 127.0.0.3 failed: $(cat "$TEST_TMP/enroll")"
ok "$PER_ADDRESS failures from 127.0.0.2 → the next is 429 (retryAfter $retry s) even with a correct code; 127.0.0.3 enrolls"
# Wrong codes from ever new addresses (each below its own limit) until A refuses: that must be the
# server-wide limit, reached after exactly OVERALL failures on both instances (their counters in
# /metrics; the race's loser above may have failed on B).
address=4 status=401
while [ "$status" = 401 ] && [ "$address" -lt 60 ]; do
  for i in $(seq 1 "$((PER_ADDRESS - 1))"); do
    status=$(enroll_from "127.0.0.$address" "ZZZZ-ZZZZ-Y$i" x)
    [ "$status" = 401 ] || break
  done
  address=$((address + 1))
done
[ "$status" = 429 ] || fail "wrong codes from many addresses were never refused (last status $status)"
grep -q 'enrollFailuresPerMinute is' "$TEST_TMP/enroll" || fail "the refusal is not the server-wide one: $(cat "$TEST_TMP/enroll")"
counted=0
for base in "$A_URL" "$B_URL"; do
  counted=$((counted + $(curl -s "$base/metrics" | sed -n 's/^nimbus_device_enroll_failures_total //p')))
done
[ "$counted" = "$OVERALL" ] || fail "A refused server-wide after $counted failures; enrollFailuresPerMinute is $OVERALL"
for base in "$A_URL" "$B_URL"; do
  NIMBUS_URL=$base
  [ "$(enroll_from 127.0.0.99 "$CAROL_CODE2" carol-ipad)" = 429 ] || fail "after $OVERALL failures in all, a correct code from a fresh address was not 429 on $base"
  grep -q 'enrollFailuresPerMinute is' "$TEST_TMP/enroll" || fail "the server-wide 429 does not name its limit: $(cat "$TEST_TMP/enroll")"
done
NIMBUS_URL=$A_URL
ok "$OVERALL failures across addresses → a correct code from a new address is 429 on A and on B (one count for the server)"

note "revocation on A reaches B; nimbus device list shows it"
request POST /devices/revoke -H "Authorization: Bearer $MAC" --data-binary "{\"tokenID\":\"$PHONE_ID\"}"
expect_status 200 "mac revokes the phone"
NIMBUS_URL=$B_URL api "$PHONE" users/current
expect_api_error 401 AUTHENTICATION_FAILED "the phone's next request on B"
api_ok "$MAC" users/current
nimbus_admin device list alice | grep "$PHONE_ID" | grep -q revoked= || fail "device list does not show the phone revoked"
ok "revoked through A: 401 on B; device list shows it revoked"

note "/metrics, /limits and secrecy"
curl -s "$A_URL/metrics" >"$TEST_TMP/metrics.txt"
grep -q '^nimbus_device_enrollments_total [1-9]' "$TEST_TMP/metrics.txt" || fail "no enrollments counted: $(grep device "$TEST_TMP/metrics.txt")"
grep -q '^nimbus_device_enroll_failures_total [1-9]' "$TEST_TMP/metrics.txt" || fail "no failures counted"
request GET /limits
expect_json_field pairingCodeSeconds 600
expect_json_field enrollFailuresPerMinutePerAddress "$PER_ADDRESS"
"$NIMBUS_TEST_PG_BIN/pg_dump" --no-owner "$NIMBUS_DB_URL" >"$TEST_TMP/dump.sql" || fail "pg_dump failed"
grep -q 'pairing_codes' "$TEST_TMP/dump.sql" || fail "the dump has no pairing_codes table"
hits=0
for secret in "${CODE//-/}" "${PHONE_CODE//-/}" "${CAROL_CODE//-/}" "$MAC" "$PHONE"; do
  for place in "$TEST_TMP/dump.sql" "$NIMBUS_LOG" "$TEST_TMP/metrics.txt"; do
    grep -a -q -F -- "$secret" "$place" && { hits=$((hits + 1)); fail_later "a code or token (${secret:0:4}…) is in $(basename "$place")"; }
  done
done
[ "$hits" = 0 ] || fail "$hits secrets found"
ok "metrics count enrollments and failures; no pairing code or token in pg_dump, the log or /metrics"
expect_no_server_errors
