#!/usr/bin/env bash
# The push relay's command line and protocol edge (docs/push.md "The relay"), against the real
# binary, with nothing but openssl and curl on the client side (the signing rule is implementable
# by hand; RelayEndToEndTests covers forwarding to the APNs stand-in).
#
# - `nimbus relay` refuses to start without --topics or a usable APNs key, key id or team id (exit 64
#   naming the flag), on a bad --listen (64), and with an installation list others can read (exit 1, chmod 600).
# - `relay installation add NAME` prints id and secret once; the list stores neither the secret nor
#   anything readable by others; a taken or malformed name is refused; `list` shows names and
#   revocations; `revoke` of an unknown name exits 1.
# - The running relay: unsigned 401 AUTHENTICATION_REQUIRED; a wrong signature, a stale timestamp, a
#   replayed request and a revoked installation 401 AUTHENTICATION_FAILED; a malformed push, or one
#   for a topic not in --topics, 400; a
#   good push with APNs unreachable 503 TRY_AGAIN_LATER with apnsFailure; an installation added
#   while it runs is accepted without a restart; SIGTERM exits 0; no token, payload or secret is in
#   the data directory or the log.
source "$(dirname "$0")/../lib.sh"

OPENSSL=$(find_tool openssl) || fail "openssl is required"
DATA="$TEST_TMP/relay-data"
KEY="$TEST_TMP/key.p8"
"$OPENSSL" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$KEY" 2>/dev/null || fail "openssl genpkey failed"
KEYARGS=(--topics com.example.App --apns-key-file "$KEY" --apns-key-id KEY1234567 --apns-team-id TEAM123456)

relay_cli() { "$NIMBUS_BIN" relay "$@" --data-dir "$DATA"; }

note "help and refusals at start"
help=$("$NIMBUS_BIN" relay --help)
for needle in --topics NIMBUS_RELAY_TOPICS --apns-key-file --apns-key-id --apns-team-id --apns-url --apns-ca-file --pushes-per-minute NIMBUS_RELAY_PUSHES_PER_MINUTE "installation add"; do
  grep -q -F -- "$needle" <<<"$help" || fail "relay --help does not list $needle"
done
"$NIMBUS_BIN" --help | grep -q "relay" || fail "nimbus --help does not list relay"
ok "relay --help lists the APNs flags, the rate limit and the installation commands"

expect_exit() { # STATUS TEXT ARGS...: nimbus relay ARGS exits STATUS, its error containing TEXT
  local want=$1 text=$2; shift 2
  local err status
  err=$(timeout 30 "$NIMBUS_BIN" relay "$@" 2>&1 >/dev/null)
  status=$?
  [ "$status" = "$want" ] || fail "relay $*: exit $status (expected $want): $err"
  [[ $err == *"$text"* ]] || fail "relay $*: the error does not say '$text': $err"
  ok "relay refuses ($want): $text"
}
expect_exit 64 "--topics" --data-dir "$DATA" --listen 127.0.0.1:0 --apns-key-file "$KEY" --apns-key-id KEY1234567 --apns-team-id TEAM123456
expect_exit 64 "not a bundle id" --data-dir "$DATA" --listen 127.0.0.1:0 --topics "com.example App" --apns-key-file "$KEY"
expect_exit 64 "--apns-key-file" --data-dir "$DATA" --listen 127.0.0.1:0 --topics com.example.App
expect_exit 64 "--apns-key-id" --data-dir "$DATA" --listen 127.0.0.1:0 --topics com.example.App --apns-key-file "$KEY" --apns-team-id TEAM123456
echo "not a key" >"$TEST_TMP/bad.p8"
expect_exit 64 "--apns-key-file" --data-dir "$DATA" --listen 127.0.0.1:0 --topics com.example.App --apns-key-file "$TEST_TMP/bad.p8" --apns-key-id K --apns-team-id T
expect_exit 64 "--listen" --data-dir "$DATA" --listen nowhere "${KEYARGS[@]}"
expect_exit 64 "https" --data-dir "$DATA" --listen 127.0.0.1:0 "${KEYARGS[@]}" --apns-url http://127.0.0.1:1

note "installation add / list / revoke"
out=$(relay_cli installation add op1) || fail "installation add op1 failed: $out"
ID=$(sed -n 's/^id: //p' <<<"$out"); SECRET=$(sed -n 's/^secret: //p' <<<"$out")
[[ $ID =~ ^ri_[A-Za-z0-9_-]{16}$ ]] || fail "installation add printed no id: $out"
[[ $SECRET =~ ^rs_[A-Za-z0-9_-]{43}$ ]] || fail "installation add printed no secret: $out"
[ "$(stat -c %a "$DATA/installations.json")" = 600 ] || fail "installations.json is $(stat -c %a "$DATA/installations.json"), not 600"
[ "$(stat -c %a "$DATA")" = 700 ] || fail "the data directory is $(stat -c %a "$DATA"), not 700"
grep -q -F "$SECRET" "$DATA/installations.json" && fail "installations.json holds the secret"
grep -q -F "$ID" "$DATA/installations.json" || fail "installations.json does not hold the id"
ok "add prints id and secret once; the list (0600 in a 0700 directory) keeps the id, not the secret"
err=$(relay_cli installation add op1 2>&1); [ $? = 1 ] && [[ $err == *"exists"* ]] || fail "a second op1 was not refused: $err"
err=$(relay_cli installation add "op 2" 2>&1); [ $? = 64 ] || fail "a name with a space was not a usage error: $err"
err=$(relay_cli installation revoke nobody 2>&1); [ $? = 1 ] && [[ $err == *"no installation named nobody"* ]] || fail "revoke nobody: $err"
ok "a taken name and an unknown revoke exit 1, a malformed name 64"

chmod 644 "$DATA/installations.json"
expect_exit 1 "chmod 600" --data-dir "$DATA" --listen 127.0.0.1:0 "${KEYARGS[@]}"
chmod 600 "$DATA/installations.json"

note "the running relay (APNs unreachable: https://127.0.0.1:1)"
RELAY_LOG="$TEST_TMP/relay.log"
"$NIMBUS_BIN" relay --listen 127.0.0.1:0 --data-dir "$DATA" "${KEYARGS[@]}" --apns-url https://127.0.0.1:1 >"$RELAY_LOG" 2>&1 &
RELAY_PID=$!
track_pid "$RELAY_PID"
for _ in $(seq 1 200); do
  NIMBUS_URL=$(grep -a -o -m1 'listening on http://[0-9.]*:[0-9]*' "$RELAY_LOG" | sed 's/^listening on //')
  [ -n "$NIMBUS_URL" ] && break
  process_alive "$RELAY_PID" || { cat "$RELAY_LOG" >&2; fail "nimbus relay exited before listening"; }
  sleep 0.1
done
[ -n "$NIMBUS_URL" ] || fail "nimbus relay did not listen within 20 s"

PUSH='{"deviceToken":"a1b2c3d4e5f60718293a4b5c6d7e8f90","environment":"production","topic":"com.example.App","pushType":"alert","priority":10,"apnsID":"7c1f3b0e-2a4d-4e5f-8a6b-9c0d1e2f3a4b","expiration":0,"payload":"eyJhcHMiOnsiYWxlcnQiOiJoaSJ9fQ"}'
# sign SECRET ID TIMESTAMP NONCE BODY: the signature, by the documented rule, with openssl.
sign() {
  local key digest
  key=$(printf 'nimbus-relay-signing-key-v1\n%s' "$1" | sha256sum | cut -d' ' -f1)
  digest=$(printf '%s' "$5" | sha256sum | cut -d' ' -f1)
  printf 'nimbus-relay-v1\nPOST\n/v1/push\n%s\n%s\n%s\n%s' "$2" "$3" "$4" "$digest" \
    | "$OPENSSL" dgst -sha256 -mac HMAC -macopt "hexkey:$key" -r | cut -d' ' -f1
}
# push SECRET ID TIMESTAMP NONCE [BODY]
push() {
  local body=${5:-$PUSH}
  request POST /v1/push -H 'Content-Type: application/json' -H "Nimbus-Relay-Installation: $2" -H "Nimbus-Relay-Timestamp: $3" \
    -H "Nimbus-Relay-Nonce: $4" -H "Nimbus-Relay-Signature: $(sign "$1" "$2" "$3" "$4" "$body")" --data-binary "$body"
}
NOW=$(date +%s)
push "$SECRET" "$ID" "$NOW" nonce-aaaaaaaaaaaaaaaa1
expect_status 503 "a good push, APNs down"
expect_error_body TRY_AGAIN_LATER
expect_json_field apnsFailure couldNotConnect
ok "a signed push is accepted and forwarded; APNs unreachable is 503 TRY_AGAIN_LATER, apnsFailure couldNotConnect"
push "$SECRET" "$ID" "$NOW" nonce-aaaaaaaaaaaaaaaa1
expect_status 401 "a replay"; expect_error_body AUTHENTICATION_FAILED
[[ $(json_field reason) == *replay* ]] || fail "a replay's reason: $HTTP_BODY"
push "$SECRET" "$ID" $((NOW - 400)) nonce-aaaaaaaaaaaaaaaa2
expect_status 401 "a stale timestamp"; expect_error_body AUTHENTICATION_FAILED
[[ $(json_field reason) == *"behind the relay's clock"* ]] || fail "a stale timestamp's reason: $HTTP_BODY"
push "rs_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8" "$ID" "$NOW" nonce-aaaaaaaaaaaaaaaa3
expect_status 401 "a wrong secret"; expect_error_body AUTHENTICATION_FAILED
request POST /v1/push --data-binary "$PUSH"
expect_status 401 "unsigned"; expect_error_body AUTHENTICATION_REQUIRED
push "$SECRET" "$ID" "$NOW" nonce-aaaaaaaaaaaaaaaa4 '{"deviceToken":"a1"}'
expect_status 400 "a malformed push"; expect_error_body BAD_REQUEST
push "$SECRET" "$ID" "$NOW" nonce-aaaaaaaaaaaaaaaa6 "${PUSH/com.example.App/com.example.Other}"
expect_status 400 "another topic"; expect_error_body BAD_REQUEST
[[ $(json_field reason) == *"does not push to com.example.Other"* ]] || fail "another topic's reason: $HTTP_BODY"

ok "unsigned 401 AUTHENTICATION_REQUIRED; replay, stale, wrong secret 401 AUTHENTICATION_FAILED; malformed or another topic 400"

out=$(relay_cli installation add op2 --output "$TEST_TMP/op2.credentials") || fail "add op2 --output: $out"
[ "$(stat -c %a "$TEST_TMP/op2.credentials")" = 600 ] || fail "the credentials file is not 0600"
grep -q '^secret: rs_' "$TEST_TMP/op2.credentials" || fail "the credentials file has no secret"
[[ $out == *"rs_"* ]] && fail "add --output printed the secret: $out"
ID2=$(sed -n 's/^id: //p' "$TEST_TMP/op2.credentials"); SECRET2=$(sed -n 's/^secret: //p' "$TEST_TMP/op2.credentials")
push "$SECRET2" "$ID2" "$(date +%s)" nonce-bbbbbbbbbbbbbbbb1
expect_status 503 "op2, added while the relay runs"
ok "an installation added while the relay runs is accepted at once (credentials file 0600)"

relay_cli installation revoke op1 >/dev/null || fail "revoke op1 failed"
push "$SECRET" "$ID" "$(date +%s)" nonce-aaaaaaaaaaaaaaaa5
expect_status 401 "revoked"; expect_error_body AUTHENTICATION_FAILED
[[ $(json_field reason) == *revoked* ]] || fail "a revoked installation's reason: $HTTP_BODY"
list=$(relay_cli installation list)
grep -E "^op1 .*$ID .*[0-9]{4}-" <<<"$list" | grep -q -v ' -$' || fail "list does not show op1 revoked: $list"
grep -E "^op2 .* -$" <<<"$list" >/dev/null || fail "list does not show op2 live: $list"
ok "revoked: the next push is 401 naming the revocation; list shows op1 revoked, op2 live"

stop_nimbus "$RELAY_PID" 15 || fail "nimbus relay did not exit 0 on SIGTERM"
ok "SIGTERM: exit 0"

note "no notification content kept: neither the device token nor the payload is in the data directory or the log"
for needle in a1b2c3d4e5f60718293a4b5c6d7e8f90 eyJhcHMiOnsiYWxlcnQiOiJoaSJ9fQ "$SECRET" "$SECRET2"; do
  grep -r -q -F -- "$needle" "$DATA" && fail "the data directory holds '$needle'"
  grep -q -F -- "$needle" "$RELAY_LOG" && fail "the relay's log holds '$needle'"
done
ok "the data directory and the log hold no token, payload or secret"
