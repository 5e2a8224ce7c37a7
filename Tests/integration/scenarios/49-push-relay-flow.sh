#!/usr/bin/env bash
# Push through the relay, end to end (docs/push.md "The relay"): the real nimbus with `--push relay`
# sends through RelayTransport to a real `nimbus relay`, which forwards to the APNs stand-in with the
# publisher's key.
#
# - `serve --push relay` without --push-relay-url or --push-relay-credentials, with a credentials file
#   that does not parse, or with a plain-http URL to another host is refused at start (exit 64).
# - The apps' flow: the Mac writes a BlockedAppEvent; the iPhone gets one alert push through the relay
#   (the relay's JWT, the publisher's topic); a device whose token APNs calls dead (410) loses its
#   registration, logged `removed 410 Unregistered`.
# - The installation revoked at the relay: the next push is not delivered and stays queued (retried),
#   nothing lost; the relay logs the refusal.
source "$(dirname "$0")/../lib.sh"
source "$IT_DIR/push.sh"

make_apns_key
standin_start
RELAY_DATA=$TEST_TMP/relay-data CREDENTIALS=$TEST_TMP/op1.credentials
"$NIMBUS_BIN" relay installation add op1 --data-dir "$RELAY_DATA" --output "$CREDENTIALS" >/dev/null || fail "relay installation add failed"
RELAY_LOG=$TEST_TMP/relay.log
"$NIMBUS_BIN" relay --listen 127.0.0.1:0 --data-dir "$RELAY_DATA" --topics "$APNS_BUNDLE" --apns-key-file "$APNS_KEY" \
  --apns-key-id "$APNS_KEY_ID" --apns-team-id "$APNS_TEAM_ID" --apns-url "$STANDIN_URL" --apns-ca-file "$STANDIN_CA" >"$RELAY_LOG" 2>&1 &
RELAY_PID=$!
track_pid "$RELAY_PID"
for _ in $(seq 1 200); do
  RELAY_URL=$(grep -a -o -m1 'listening on http://[0-9.]*:[0-9]*' "$RELAY_LOG" | sed 's/^listening on //')
  [ -n "$RELAY_URL" ] && break
  process_alive "$RELAY_PID" || fail "nimbus relay exited: $(tail -n 5 "$RELAY_LOG")"
  sleep 0.1
done
[ -n "$RELAY_URL" ] || fail "nimbus relay did not listen within 20 s"
TOPICS="$API_CONTAINER=$APNS_BUNDLE"
RELAY_FLAGS=(--push relay --apns-topics "$TOPICS" --push-relay-url "$RELAY_URL" --push-relay-credentials "$CREDENTIALS")

note "start-up refusals"
expect_refusal() { # WHAT TEXT ARGS...
  local what=$1 text=$2; shift 2
  local err status
  err=$(timeout 30 "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url postgresql://127.0.0.1:1/x "$@" 2>&1 >/dev/null)
  status=$?
  [ "$status" = 64 ] || fail "$what: exit $status (expected 64): $err"
  [[ $err == *"$text"* ]] || fail "$what: the error does not say '$text': $err"
  ok "$what: exit 64, '$text'"
}
expect_refusal "no relay URL" "--push-relay-url" --push relay --apns-topics "$TOPICS" --push-relay-credentials "$CREDENTIALS"
expect_refusal "no credentials" "--push-relay-credentials" --push relay --apns-topics "$TOPICS" --push-relay-url "$RELAY_URL"
echo "secret: nope" >"$TEST_TMP/bad.credentials"
expect_refusal "credentials that do not parse" "--push-relay-credentials" --push relay --apns-topics "$TOPICS" --push-relay-url "$RELAY_URL" \
  --push-relay-credentials "$TEST_TMP/bad.credentials"
expect_refusal "plain http to another host" "must be https" --push relay --apns-topics "$TOPICS" --push-relay-url http://relay.example.com \
  --push-relay-credentials "$CREDENTIALS"

start_store_server "${RELAY_FLAGS[@]}"
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice iphone
issue_token OLD alice old-ipad
PHONE_APNS=$(apns_token aa 1) OLD_APNS=$(apns_token ffff0410 2)
api_ok "$PHONE" tokens/register "{\"apnsEnvironment\":\"development\",\"apnsToken\":\"$PHONE_APNS\"}"
expect_json_field push relay
api_ok "$OLD" tokens/register "{\"apnsEnvironment\":\"development\",\"apnsToken\":\"$OLD_APNS\"}"
api_ok "$PHONE" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"blocked","subscriptionType":"query",
  "query":{"recordType":"BlockedAppEvent"},"firesOn":["create"],"notificationInfo":{"title":"App blocked","shouldBadge":true}}}]}'
event() {
  api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"$1\",\"recordType\":\"BlockedAppEvent\",
    \"fields\":{\"appName\":{\"value\":\"Terminal\"},\"bundleID\":{\"value\":\"com.apple.Terminal\"},\"deviceName\":{\"value\":\"mac\"},
    \"timestamp\":{\"value\":$(now_ms)}}}}]}"
}

note "the apps' flow through the relay"
event e1
wait_push_count "$PHONE_APNS" 1 5 200 || fail "the iPhone got no push through the relay within 5 s"
first=$(pushes "$PHONE_APNS" | head -n 1)
IFS=$'\t' read -r _ _ _ _ type priority _ record _ title badge _ <<<"$first"
[ "$type $priority $record $title $badge" = "alert 10 e1 App blocked 1" ] || fail "not the subscription's alert: '$first'"
grep -a "\"token\": \"$PHONE_APNS\"" "$STANDIN_LOG" | grep -q "\"kid\": \"$APNS_KEY_ID\"" || fail "the push did not carry the relay's JWT"
ok "one alert push to the iPhone, through the relay, signed with the publisher's key"
for _ in $(seq 1 100); do
  [ "$(psql_db "SELECT count(*) FROM push_registrations WHERE apns_token = '$OLD_APNS'")" = 0 ] && break
  sleep 0.1
done
[ "$(psql_db "SELECT count(*) FROM push_registrations WHERE apns_token = '$OLD_APNS'")" = 0 ] || fail "the dead token's registration was not removed"
[ "$(psql_db "SELECT outcome || ' ' || status || ' ' || reason FROM push_log WHERE device_token_id = '$OLD_ID' ORDER BY 1 LIMIT 1")" = "removed 410 Unregistered" ] \
  || fail "the log does not say removed 410 Unregistered: $(psql_db "SELECT outcome, status, reason FROM push_log")"
ok "the dead token (410 through the relay) lost its registration, logged removed 410 Unregistered"

note "revoked at the relay: nothing delivered, nothing lost"
"$NIMBUS_BIN" relay installation revoke op1 --data-dir "$RELAY_DATA" >/dev/null || fail "revoke failed"
before=$(push_count "$PHONE_APNS")
event e2
sleep 3
[ "$(push_count "$PHONE_APNS")" = "$before" ] || fail "a push went through a revoked installation"
[ "$(psql_db "SELECT count(*) FROM push_outbox")" -ge 1 ] || fail "the refused push is not kept in the outbox"
grep -q "refused a revoked installation" "$RELAY_LOG" || fail "the relay did not log the refusal"
ok "after revocation: no push reaches APNs; the push stays queued for retry; the relay logs the refusal"

stop_nimbus "$RELAY_PID" 15 || fail "nimbus relay did not exit 0"
finish_scenario
