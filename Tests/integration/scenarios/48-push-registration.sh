#!/usr/bin/env bash
# Push registration (docs/api.md "Push to sleeping devices", docs/push.md "Registrations and the
# outbox"), against the real binary: one instance with push off and one with push on, on one
# database.
#
# - `serve --push` / `--apns-topics` that do not parse (flag or environment) exit 64 naming the flag;
#   `serve --help` lists both with their environment variables.
# - Push off: tokens/register checks its input (400) and answers "push": "off", storing nothing.
# - Push on: GET /limits has the push limits; tokens/register answers the token lower-cased and
#   stores it; GET /devices shows it under the device (an empty list for the others); bad input and a
#   container without a topic are 400 BAD_REQUEST saying which, nothing stored.
# - The APNs token moves to the device token that registers it; a notification queues one push for
#   the registered device of the user, none for the writer or another user; tokens/unregister
#   answers true then false; a revoked device token loses its registrations at once.
source "$(dirname "$0")/../lib.sh"

TOPICS="$API_CONTAINER=com.mirxa.AppLocker"
registrations() { psql_db "SELECT count(*) FROM push_registrations"; }
HEX32=$(repeat_char ab 32)

note "flags that do not parse are refused at start, naming the flag"
expect_refusal() { # WHAT TEXT ARGS...: serve exits 64 and its error contains TEXT
  local what=$1 text=$2; shift 2
  local err status
  err=$(env "${ENVIRONMENT[@]}" timeout 30 "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url postgresql://127.0.0.1:1/x "$@" 2>&1 >/dev/null)
  status=$?
  [ "$status" = 64 ] || fail "$what: exit $status (expected 64): $err"
  [[ $err == *"$text"* ]] || fail "$what: the error does not say '$text': $err"
  ok "$what: exit 64, '$text'"
}
ENVIRONMENT=(NIMBUS_UNUSED=1)
expect_refusal "--push sometimes" "--push must be off, direct or relay" --push sometimes
expect_refusal "an entry without =" "is not CONTAINER=BUNDLE_ID" --apns-topics "$API_CONTAINER"
expect_refusal "a bundle id with a space" "the bundle id must be" --apns-topics "$API_CONTAINER=com mirxa"
expect_refusal "a container twice" "twice" --apns-topics "$TOPICS,$TOPICS"
ENVIRONMENT=(NIMBUS_PUSH=always)
expect_refusal "NIMBUS_PUSH=always" "--push must be off, direct or relay"
ENVIRONMENT=(NIMBUS_UNUSED=1)
help=$("$NIMBUS_BIN" serve --help)
for needle in "--push" "NIMBUS_PUSH" "--apns-topics" "NIMBUS_APNS_TOPICS"; do
  grep -q -F -- "$needle" <<<"$help" || fail "serve --help does not list $needle"
done
ok "serve --help lists --push and --apns-topics with their environment variables"

start_store_server
OFF_URL=$NIMBUS_URL
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
issue_token MAC alice mac
issue_token PHONE alice phone
issue_token TABLET alice tablet
issue_token BOB bob phone

note "push off: input is checked, nothing is stored"
api_ok "$PHONE" tokens/register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$HEX32\"}"
expect_json_field push off
expect_json_field apnsToken "$HEX32"
api "$PHONE" tokens/register '{"apnsEnvironment":"production","apnsToken":"abc"}'
expect_api_error 400 BAD_REQUEST "push off, odd-length token"
api_ok "$PHONE" tokens/unregister '{}'
expect_json_field unregistered false
expect_json_field push off
[ "$(registrations)" = 0 ] || fail "push off stored $(registrations) registrations"
request GET /devices -H "Authorization: Bearer $PHONE"
expect_status 200 "GET /devices, push off"
[[ $HTTP_BODY == *'"push":[]'* ]] || fail "GET /devices with nothing registered: $HTTP_BODY"
ok "push off: register answers \"push\": \"off\", a bad token is 400, nothing stored"

# A real key (the sender refuses to start without one); nothing listens at the APNs URL, so every
# push queued here stays in the outbox (no answer: retried later), which is what this scenario reads.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TEST_TMP/apns.p8" 2>/dev/null || fail "openssl genpkey failed"
start_nimbus --database-url "$NIMBUS_DB_URL" --push direct --apns-topics "$TOPICS" --apns-key-file "$TEST_TMP/apns.p8" \
  --apns-key-id ABC123DEFG --apns-team-id DEF123GHIJ --apns-url https://127.0.0.1:1
ON_URL=$NIMBUS_URL

note "GET /limits carries the push limits"
request GET /limits
expect_json_field pushGraceMillis 1500
expect_json_field maxBackgroundPushesPerHour 3
expect_json_field maxPushPayloadBytes 4096
ok "GET /limits: pushGraceMillis 1500, maxBackgroundPushesPerHour 3, maxPushPayloadBytes 4096"

note "bad input is a request-level BAD_REQUEST saying which; nothing stored"
bad_register() { # BODY TEXT
  api "$PHONE" tokens/register "$1"
  expect_api_error 400 BAD_REQUEST "tokens/register $1"
  [[ $(json_field reason) == *"$2"* ]] || fail "tokens/register $1: the reason does not say '$2': $HTTP_BODY"
}
bad_register "{\"apnsToken\":\"$HEX32\"}" "apnsEnvironment is required"
bad_register "{\"apnsEnvironment\":\"sandbox\",\"apnsToken\":\"$HEX32\"}" "apnsEnvironment must be development or production"
bad_register '{"apnsEnvironment":"production"}' "apnsToken is required"
bad_register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"${HEX32}a\"}" "even number of hexadecimal digits"
bad_register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$(repeat_char zz 32)\"}" "hexadecimal digits"
bad_register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$(repeat_char ab 15)\"}" "encodes 15"
bad_register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$(repeat_char ab 201)\"}" "encodes 201"
bad_register '{"apnsEnvironment":"production","apnsToken":12}' "apnsToken must be a string"
API_CONTAINER=iCloud.org.p0deje.Maccy bad_register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$HEX32\"}" "no APNs topic"
[ "$(registrations)" = 0 ] || fail "bad input stored $(registrations) registrations"
ok "nine malformed registrations: 400 each, saying which, nothing stored"

note "register, shown in GET /devices"
UPPER=$(repeat_char AB 32)
api_ok "$PHONE" tokens/register "{\"apnsEnvironment\":\"development\",\"apnsToken\":\"$UPPER\"}"
expect_json_field push direct
expect_json_field apnsToken "$HEX32"
expect_json_field apnsEnvironment development
[ "$(psql_db "SELECT apns_token FROM push_registrations WHERE device_token_id = '$PHONE_ID'")" = "$HEX32" ] \
  || fail "the registration is not stored lower-case"
request GET /devices -H "Authorization: Bearer $MAC"
expect_status 200 "GET /devices"
phone_entry=$(json_read object "tokenID=$PHONE_ID" <<<"$HTTP_BODY")
[[ $phone_entry == *"\"push\":[{\"container\":\"$API_CONTAINER\",\"environment\":\"development\",\"apnsEnvironment\":\"development\",\"registeredAt\":"* ]] \
  || fail "GET /devices does not show the phone's registration: $HTTP_BODY"
[[ $phone_entry != *lastStatus* ]] || fail "a registration without attempts shows lastStatus: $phone_entry"
mac_entry=$(json_read object "tokenID=$MAC_ID" <<<"$HTTP_BODY")
[[ $mac_entry == *'"push":[]'* ]] || fail "the mac, not registered, shows: $mac_entry"
api_ok "$BOB" tokens/register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$(repeat_char 22 32)\"}"
ok "registered: the phone's entry in GET /devices, the mac's list empty"

note "the APNs token moves to the device token that registers it"
api_ok "$TABLET" tokens/register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$HEX32\"}"
[ "$(psql_db "SELECT device_token_id FROM push_registrations WHERE apns_token = '$HEX32'")" = "$TABLET_ID" ] \
  || fail "the APNs token did not move to the tablet"
[ "$(registrations)" = 2 ] || fail "$(registrations) registrations after the move, expected 2 (tablet, bob)"
ok "the tablet took the phone's APNs token"

note "a notification queues one push for the user's other registered device"
api_ok "$MAC" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"notes","subscriptionType":"query","query":{"recordType":"Note"},"notificationInfo":{"title":"New note"}}}]}'
api_ok "$BOB" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"notes","subscriptionType":"query","query":{"recordType":"Note"},"notificationInfo":{"title":"New note"}}}]}'
api_ok "$MAC" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"n1","recordType":"Note","fields":{"title":{"value":"a"}}}}]}'
queued=$(psql_db "SELECT r.device_token_id || ' ' || o.push_type FROM push_outbox o JOIN push_registrations r ON r.id = o.registration_id")
[ "$queued" = "$TABLET_ID alert" ] || fail "the outbox holds '$queued', expected one alert for the tablet"
ok "one alert push queued for the tablet; none for the writing mac or bob"

note "GET /devices shows the newest attempt of the delivery log"
user_id=$(psql_db "SELECT user_id FROM push_registrations WHERE device_token_id = '$TABLET_ID'")
log_entry() { # AT_SQL OUTCOME STATUS REASON
  psql_db "INSERT INTO push_log (at, user_id, device_token_id, container, environment, notification_id, push_type, outcome, status, reason, attempts)
           VALUES ($1, $user_id, '$TABLET_ID', '$API_CONTAINER', 'development', gen_random_uuid(), 'alert', '$2', $3, $4, 1)" >/dev/null
}
log_entry "'2030-01-01T00:00:00Z'" retry 503 "'ServiceUnavailable'"
log_entry "'2030-01-01T00:00:01Z'" removed 410 "'Unregistered'"
log_entry "'2030-01-01T00:00:02Z'" long-poll NULL NULL
request GET /devices -H "Authorization: Bearer $TABLET"
tablet_entry=$(json_read object "tokenID=$TABLET_ID" <<<"$HTTP_BODY")
[[ $tablet_entry == *'"lastAttemptAt":1893456001000,"lastStatus":410,"lastReason":"Unregistered"'* ]] \
  || fail "GET /devices does not show the newest attempt (410 Unregistered at 1893456001000): $tablet_entry"
ok "GET /devices: lastAttemptAt, lastStatus and lastReason of the newest attempt (a long-poll delivery is no attempt)"

note "long-poll first: a parked device's push waits; its next poll past the notification drops it"
api_ok "$TABLET" tokens/create '{}'
CHANNEL_URL=$(json_field webcourierURL) C0=$(json_field cursor)
lp_get tablet "$TABLET" "$CHANNEL_URL?since=$C0&wait=30"
wait_metric nimbus_longpoll_waiters 1 10 || fail "the tablet's poll did not park (waiters: $LP_METRIC)"
written_ms=$(now_ms)
api_ok "$MAC" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"n2","recordType":"Note","fields":{"title":{"value":"b"}}}}]}'
lp_finish tablet 10
[ "$LP_STATUS" = 200 ] || fail "the parked poll answered $LP_STATUS"
C1=$(json_last_field cursor "$LP_BODY") || fail "the poll answered no cursor: $LP_BODY"
row=$(psql_db "SELECT o.long_poll_first, (extract(epoch FROM o.due_at) * 1000)::bigint FROM push_outbox o
               JOIN notifications n ON n.database_id = o.database_id AND n.seq = o.notification_seq WHERE n.record_name = 'n2'")
[[ $row == t\|* ]] || fail "the push of n2 is not long-poll first: '$row'"
due=${row#t|}
# Due pushGraceMillis after the write (the write happened between written_ms and now).
[ "$due" -ge $((written_ms + 1500)) ] && [ "$due" -le $(( $(now_ms) + 1500 )) ] \
  || fail "the push of n2 is due at $due, not 1500 ms after the write (written at ${written_ms}-$(now_ms))"
request GET "${CHANNEL_URL#"$NIMBUS_URL"}?since=$C1" -H "Authorization: Bearer $TABLET"
expect_status 200 "the tablet polls again past n2"
left=$(psql_db "SELECT string_agg(n.record_name, ',' ORDER BY n.record_name) FROM push_outbox o
                JOIN notifications n ON n.database_id = o.database_id AND n.seq = o.notification_seq")
[ "$left" = n1 ] || fail "after the re-poll the outbox holds '$left', expected only n1's push (not long-poll first)"
[ "$(psql_db "SELECT count(*) FROM push_log WHERE outcome = 'long-poll' AND by_long_poll AND device_token_id = '$TABLET_ID'")" = 1 ] \
  || fail "the dropped push is not logged as delivered by long-poll"
ok "n2's push waited 1500 ms for the parked tablet and was dropped by its next poll (logged 'long-poll'); n1's stays"

note "unregister, and revocation removes registrations"
api_ok "$TABLET" tokens/unregister '{}'
expect_json_field unregistered true
api_ok "$TABLET" tokens/unregister '{}'
expect_json_field unregistered false
[ "$(psql_db "SELECT count(*) FROM push_outbox")" = 0 ] || fail "unregistering left its queued pushes"
api_ok "$PHONE" tokens/register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$HEX32\"}"
request POST /devices/revoke -H "Authorization: Bearer $MAC" -H 'Content-Type: application/json' --data-binary "{\"tokenID\":\"$PHONE_ID\"}"
expect_status 200 "revoke the phone"
[ "$(psql_db "SELECT count(*) FROM push_registrations WHERE device_token_id = '$PHONE_ID'")" = 0 ] \
  || fail "the revoked phone keeps its registration"
"$NIMBUS_BIN" token revoke "$BOB_ID" --database-url "$NIMBUS_DB_URL" >/dev/null || fail "token revoke $BOB_ID failed"
[ "$(registrations)" = 0 ] || fail "$(registrations) registrations left after both revocations"
ok "unregister true then false; both revocation paths removed the registrations at once"

expect_no_server_errors
NIMBUS_URL=$OFF_URL expect_no_server_errors
