#!/usr/bin/env bash
# Push, direct, end to end (docs/push.md "The sender"): the real nimbus with `--push direct` sends
# through its HTTP/2 client to the APNs stand-in (Tests/push/apns-standin.py: TLS with its own CA,
# the provider token's ES256 signature checked against the public half of a key made here).
#
# - `serve --push direct` without a key id, team id or key file, with a key file that does not
#   parse, and `--push relay` are refused at start (exit 64) saying which; `serve --help` lists the
#   APNs flags with their environment variables; the key appears in no log, /metrics or console page.
# - The apps' flow (AppLocker schema): the Mac writes a BlockedAppEvent; the iPhone (registered,
#   no long-poll) gets exactly one alert push within 1 s, with the subscription's title, the badge
#   and the `nimbus` member; the Mac (registered too) gets none; the other user's devices none.
# - Long-poll first: parked and re-polling within the grace → no push; no re-poll → one push after
#   the grace (pushGraceMillis, 1,500 ms).
# - A revoked device gets no more pushes.
source "$(dirname "$0")/../lib.sh"
source "$IT_DIR/push.sh"

make_apns_key
standin_start
push_flags

note "start-up refusals: each says which setting"
expect_refusal() { # WHAT TEXT ARGS...: serve exits 64 and its error contains TEXT
  local what=$1 text=$2; shift 2
  local err status
  err=$(timeout 30 "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url postgresql://127.0.0.1:1/x "$@" 2>&1 >/dev/null)
  status=$?
  [ "$status" = 64 ] || fail "$what: exit $status (expected 64): $err"
  [[ $err == *"$text"* ]] || fail "$what: the error does not say '$text': $err"
  ok "$what: exit 64, '$text'"
}
TOPICS="$API_CONTAINER=$APNS_BUNDLE"
expect_refusal "no key id" "--push direct needs --apns-key-id" --push direct --apns-topics "$TOPICS" --apns-key-file "$APNS_KEY" --apns-team-id T1
expect_refusal "no team id" "--push direct needs --apns-team-id" --push direct --apns-topics "$TOPICS" --apns-key-file "$APNS_KEY" --apns-key-id K1
expect_refusal "no key file" "--push direct needs --apns-key-file" --push direct --apns-topics "$TOPICS" --apns-key-id K1 --apns-team-id T1
echo "not a key" >"$TEST_TMP/bad.p8"
expect_refusal "a key file that does not parse" "--apns-key-file $TEST_TMP/bad.p8" \
  --push direct --apns-topics "$TOPICS" --apns-key-file "$TEST_TMP/bad.p8" --apns-key-id K1 --apns-team-id T1
expect_refusal "the public half as the key" "--apns-key-file" \
  --push direct --apns-topics "$TOPICS" --apns-key-file "$APNS_PUB" --apns-key-id K1 --apns-team-id T1
expect_refusal "a key id that is not one" "key id" --push direct --apns-topics "$TOPICS" --apns-key-file "$APNS_KEY" --apns-key-id "K 1" --apns-team-id T1
expect_refusal "an APNs URL with a path" "--apns-url" "${PUSH_FLAGS[@]}" --apns-url https://127.0.0.1:1/3/device
expect_refusal "--push relay without its URL" "--push-relay-url" --push relay --apns-topics "$TOPICS"
err=$(NIMBUS_PUSH=direct NIMBUS_APNS_TOPICS="$TOPICS" NIMBUS_APNS_KEY_FILE="$APNS_KEY" NIMBUS_APNS_TEAM_ID=T1 \
  timeout 30 "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url postgresql://127.0.0.1:1/x 2>&1 >/dev/null)
[ $? = 64 ] && [[ $err == *"--apns-key-id"* ]] || fail "the environment's settings without a key id were not refused: $err"
help=$("$NIMBUS_BIN" serve --help)
for needle in --apns-key-file NIMBUS_APNS_KEY_FILE --apns-key-id NIMBUS_APNS_KEY_ID --apns-team-id NIMBUS_APNS_TEAM_ID \
              --apns-url NIMBUS_APNS_URL --apns-ca-file NIMBUS_APNS_CA_FILE; do
  grep -q -F -- "$needle" <<<"$help" || fail "serve --help does not list $needle"
done
ok "serve --help lists the APNs flags with their environment variables; the environment is refused alike"

start_store_server "${PUSH_FLAGS[@]}" --admin-listen 127.0.0.1:0
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
issue_token MAC alice mac
issue_token PHONE alice iphone
issue_token BOB_PHONE bob iphone
issue_token BOB_MAC bob mac
PHONE_APNS=$(apns_token aa 1) MAC_APNS=$(apns_token aa 2) BOB_PHONE_APNS=$(apns_token aa 3) BOB_MAC_APNS=$(apns_token aa 4)
for device in "PHONE $PHONE_APNS" "MAC $MAC_APNS" "BOB_PHONE $BOB_PHONE_APNS" "BOB_MAC $BOB_MAC_APNS"; do
  set -- $device
  api_ok "${!1}" tokens/register "{\"apnsEnvironment\":\"development\",\"apnsToken\":\"$2\"}"
  expect_json_field push direct
done
SUBSCRIPTION='{"operations":[{"operationType":"create","subscription":{"subscriptionID":"blocked","subscriptionType":"query",
  "query":{"recordType":"BlockedAppEvent"},"firesOn":["create"],
  "notificationInfo":{"title":"App blocked","alertBody":"Someone opened a locked app","shouldBadge":true,"desiredKeys":["appName","deviceName"]}}}]}'
api_ok "$PHONE" subscriptions/modify "$SUBSCRIPTION"
api_ok "$BOB_PHONE" subscriptions/modify "$SUBSCRIPTION"

event() { # TOKEN NAME [APP]: the Mac of TOKEN's user writes a BlockedAppEvent
  api_ok "$1" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"$2\",\"recordType\":\"BlockedAppEvent\",
    \"fields\":{\"appName\":{\"value\":\"${3:-Terminal}\"},\"bundleID\":{\"value\":\"com.apple.Terminal\"},\"deviceName\":{\"value\":\"mac\"},
    \"timestamp\":{\"value\":$(now_ms)}}}}]}"
}

note "the apps' flow: the Mac writes a BlockedAppEvent, the sleeping iPhone gets one alert"
written=$(now_ms)
event "$MAC" e1
wait_push_count "$PHONE_APNS" 1 5 200 || fail "the iPhone got no push within 5 s"
first=$(pushes "$PHONE_APNS" | head -n 1)
IFS=$'\t' read -r at status _ apns_id type priority _ record nid title badge omitted has_fields _ mutable available _ <<<"$first"
[ $((at - written)) -le 1000 ] || fail "the push reached the stand-in $((at - written)) ms after the write (over 1 s)"
[ "$type $priority $record $title $badge $mutable $available" = "alert 10 e1 App blocked 1 1 -" ] \
  || fail "the push is not the subscription's alert: '$first'"
[ "$omitted $has_fields" = "False True" ] || fail "the push has no fields: '$first'"
[[ $apns_id =~ ^[0-9a-fA-F-]{36}$ ]] || fail "apns-id '$apns_id' is not a UUID"
payload=$(grep -a "\"recordName\": \"e1\"" "$STANDIN_LOG" | head -n 1)
for member in "\"container\": \"$API_CONTAINER\"" '"environment": "development"' '"cursor": "' '"notificationType": "query"' \
              '"subscriptionID": "blocked"' '"body": "Someone opened a locked app"' '"appName": {"type": "STRING", "value": "Terminal"}'; do
  [[ $payload == *"$member"* ]] || fail "the payload lacks $member: $payload"
done
sleep 1.5
[ "$(push_count "$PHONE_APNS")" = 1 ] || fail "the iPhone got $(push_count "$PHONE_APNS") pushes, expected exactly one"
[ "$(push_count "$MAC_APNS")" = 0 ] || fail "the writing Mac got a push"
[ "$(push_count "$BOB_PHONE_APNS")$(push_count "$BOB_MAC_APNS")" = 00 ] || fail "the other user's devices got pushes"
[ "$(psql_db "SELECT count(*) FROM push_outbox")" = 0 ] || fail "the outbox still holds pushes after delivery"
[ "$(psql_db "SELECT outcome || ' ' || status FROM push_log WHERE device_token_id = '$PHONE_ID'")" = "delivered 200" ] \
  || fail "the delivery log does not say delivered 200: $(psql_db "SELECT outcome, status FROM push_log")"
ok "one alert push to the iPhone $((at - written)) ms after the write: title, body, badge, mutable-content, nimbus member with fields; none to the Mac or bob"

note "long-poll first: parked and re-polling within the grace, no push"
api_ok "$PHONE" tokens/create '{}'
CHANNEL_URL=$(json_field webcourierURL) C0=$(json_field cursor)
lp_get phone "$PHONE" "$CHANNEL_URL?since=$C0&wait=30"
wait_metric nimbus_longpoll_waiters 1 10 || fail "the phone's poll did not park (waiters: $LP_METRIC)"
event "$MAC" e2
lp_finish phone 10
[ "$LP_STATUS" = 200 ] || fail "the parked poll answered $LP_STATUS"
C1=$(json_last_field cursor "$LP_BODY") || fail "the poll answered no cursor: $LP_BODY"
request GET "${CHANNEL_URL#"$NIMBUS_URL"}?since=$C1" -H "Authorization: Bearer $PHONE"
expect_status 200 "the phone polls again past e2"
sleep 2.5
[ "$(pushes "$PHONE_APNS" | awk -F'\t' '$8 == "e2"' | wc -l)" = 0 ] || fail "e2 was pushed though the phone's long-poll had it"
[ "$(psql_db "SELECT count(*) FROM push_log WHERE outcome = 'long-poll' AND device_token_id = '$PHONE_ID'")" = 1 ] \
  || fail "e2's push is not logged as delivered by long-poll"
ok "e2 reached the parked poll; the re-poll within the grace dropped its push (none at the stand-in after 2.5 s)"

note "long-poll first: parked but no re-poll, one push after the grace"
lp_get phone "$PHONE" "$CHANNEL_URL?since=$C1&wait=30"
wait_metric nimbus_longpoll_waiters 1 10 || fail "the phone's second poll did not park"
written=$(now_ms)
event "$MAC" e3
lp_finish phone 10
wait_push_count "$PHONE_APNS" 2 6 200 || fail "e3 was not pushed within 6 s though the phone did not poll again"
e3=$(pushes "$PHONE_APNS" | awk -F'\t' '$8 == "e3"')
[ "$(wc -l <<<"$e3")" = 1 ] || fail "e3 pushed $(wc -l <<<"$e3") times"
delay=$(( $(cut -f1 <<<"$e3") - written ))
[ "$delay" -ge 1400 ] && [ "$delay" -le 3000 ] || fail "e3 was pushed $delay ms after the write, not after the 1,500 ms grace"
ok "e3: no re-poll, pushed once $delay ms after the write"

note "a revoked device gets no more pushes"
"$NIMBUS_BIN" token revoke "$PHONE_ID" --database-url "$NIMBUS_DB_URL" >/dev/null || fail "token revoke failed"
before=$(push_count "$PHONE_APNS")
event "$MAC" e4
event "$BOB_MAC" b1
wait_push_count "$BOB_PHONE_APNS" 1 5 200 || fail "bob's phone got no push for b1 (the sender stopped?)"
sleep 1
[ "$(push_count "$PHONE_APNS")" = "$before" ] || fail "the revoked iPhone got a push"
ok "after revocation: no push to the iPhone; bob's phone still gets its own"

note "the key is nowhere to be read"
key_line=$(sed -n 2p "$APNS_KEY")
CONSOLE=$(admin_url)
ADMIN_TOKEN=$(nimbus_admin admin token issue ops | sed -n 's/^token: //p')
console=$(curl -s --max-time 10 -H "Authorization: Bearer $ADMIN_TOKEN" "$CONSOLE/api/configuration")
[[ $console == *'"apns-key-file":"redacted"'* ]] || fail "the console's configuration does not show the key file as redacted: $console"
[[ $console == *"\"apns-key-id\":\"$APNS_KEY_ID\""* ]] || fail "the console's configuration lacks the key id: $console"
metrics=$(curl -s --max-time 10 "$NIMBUS_URL/metrics")
for where in "$(cat "$NIMBUS_LOG")" "$console" "$metrics"; do
  [[ $where != *"$key_line"* ]] || fail "the APNs key appears in the log, the console or /metrics"
done
[[ $console != *"$APNS_KEY"* ]] || fail "the console shows the key file's path"
ok "the key is in no log line, console page or /metrics"

expect_no_server_errors
finish_scenario
