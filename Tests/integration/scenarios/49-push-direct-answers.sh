#!/usr/bin/env bash
# Push, direct: what the sender does with each APNs answer (docs/api.md "At least once, nothing
# lost"; docs/push.md "The sender"), the real nimbus against the APNs stand-in.
#
# - 410 Unregistered and 400 BadDeviceToken remove the registration (GET /devices shows it gone,
#   the log says removed) and are not retried.
# - 403 ExpiredProviderToken once → a new provider token (a later iat), then 200, same apns-id.
# - 500 → retried with backoff and delivered, every attempt with the same apns-id; 429 with
#   Retry-After → the next attempt no sooner than it says.
# - A payload over 4,096 bytes goes without its fields and with "fieldsOmitted": true.
# - A content-available-only subscription gives a background push: priority 5, a collapse id,
#   `aps` holding only content-available.
# - /metrics counts the sender's 200s and its failures by APNs reason.
# - SIGTERM with a push in flight: the server waits for its answer, records it, and exits 0.
source "$(dirname "$0")/../lib.sh"
source "$IT_DIR/push.sh"

make_apns_key
standin_start
push_flags
start_store_server "${PUSH_FLAGS[@]}"
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice iphone
issue_token GONE alice old-iphone
issue_token BAD alice ipad
PHONE_APNS=$(apns_token aa 1) GONE_APNS=$(apns_token ffff0410 2) BAD_APNS=$(apns_token ffff0400 3)
for device in "PHONE $PHONE_APNS" "GONE $GONE_APNS" "BAD $BAD_APNS"; do
  set -- $device
  api_ok "${!1}" tokens/register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$2\"}"
done
api_ok "$PHONE" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"blocked","subscriptionType":"query",
  "query":{"recordType":"BlockedAppEvent"},"notificationInfo":{"title":"App blocked","desiredKeys":["appName"]}}}]}'

event() { # NAME [APP]: the Mac writes a BlockedAppEvent
  api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"$1\",\"recordType\":\"BlockedAppEvent\",
    \"fields\":{\"appName\":{\"value\":\"${2:-Terminal}\"},\"timestamp\":{\"value\":$(now_ms)}}}}]}"
}
of() { pushes "$PHONE_APNS" | awk -F'\t' -v r="$1" '$8 == r'; } # the phone's requests for record R

note "410 and 400 remove the registration"
event e1
wait_push_count "$PHONE_APNS" 1 5 200 || fail "the phone got no push for e1"
wait_push_count "$GONE_APNS" 1 5 || fail "the stand-in saw no request for the 410 device"
wait_push_count "$BAD_APNS" 1 5 || fail "the stand-in saw no request for the 400 device"
sleep 1.5
[ "$(pushes "$GONE_APNS" | cut -f2,3)" = $'410\tUnregistered' ] || fail "the 410 device: $(pushes "$GONE_APNS" | cut -f2,3 | tr '\n' ' ')"
[ "$(pushes "$BAD_APNS" | cut -f2,3)" = $'400\tBadDeviceToken' ] || fail "the 400 device: $(pushes "$BAD_APNS" | cut -f2,3 | tr '\n' ' ')"
request GET /devices -H "Authorization: Bearer $PHONE"
for id in "$GONE_ID" "$BAD_ID"; do
  entry=$(json_read object "tokenID=$id" <<<"$HTTP_BODY")
  [[ $entry == *'"push":[]'* ]] || fail "GET /devices still shows a registration for $id: $entry"
done
[ "$(psql_db "SELECT string_agg(outcome || ' ' || status || ' ' || reason, ',' ORDER BY status) FROM push_log
              WHERE device_token_id IN ('$GONE_ID', '$BAD_ID')")" = "removed 400 BadDeviceToken,removed 410 Unregistered" ] \
  || fail "the log does not say removed: $(psql_db "SELECT outcome, status, reason FROM push_log")"
event e2
wait_push_count "$PHONE_APNS" 2 5 200 || fail "the phone got no push for e2"
sleep 0.5
[ "$(push_count "$GONE_APNS")$(push_count "$BAD_APNS")" = 11 ] || fail "a removed registration was pushed to again"
ok "410 and 400: one request each, registrations gone from GET /devices, logged removed; the phone unaffected"

note "403 ExpiredProviderToken once: a new provider token, then 200"
old_iat=$(of e2 | cut -f17)
sleep 1.1
standin_control "{\"rejectIssuedBefore\": $(( $(now_ms) / 1000 ))}"
event e3
wait_push_count "$PHONE_APNS" 4 5 || fail "e3: not two requests (403 then the retry) within 5 s"
e3=$(of e3)
[ "$(cut -f2,3 <<<"$e3" | tr '\n\t' '; ')" = "403 ExpiredProviderToken;200 -;" ] || fail "e3's requests: $(cut -f2,3 <<<"$e3" | tr '\n' ' ')"
[ "$(cut -f4 <<<"$e3" | sort -u | wc -l)" = 1 ] || fail "e3's retry has another apns-id"
new_iat=$(tail -n 1 <<<"$e3" | cut -f17)
[ "$(head -n 1 <<<"$e3" | cut -f17)" = "$old_iat" ] && [ "$new_iat" -gt "$old_iat" ] || fail "the provider token was not renewed (iat $old_iat → $new_iat)"
ok "e3: 403 ExpiredProviderToken, then 200 with a token issued at $new_iat (was $old_iat), same apns-id"

note "500: retried and delivered, every attempt the same apns-id"
standin_control '{"answer": {"status": 500, "reason": "InternalServerError"}}'
event e4
deadline=$(( $(now_ms) + 8000 ))
until [ "$(of e4 | awk -F'\t' '$2 == 500' | wc -l)" -ge 2 ]; do
  [ "$(now_ms)" -gt "$deadline" ] && fail "e4 was not attempted twice within 8 s: $(of e4 | cut -f1,2 | tr '\n' ' ')"
  sleep 0.05
done
standin_control '{}'
deadline=$(( $(now_ms) + 10000 ))
until [ "$(of e4 | awk -F'\t' '$2 == 200' | wc -l)" = 1 ]; do
  [ "$(now_ms)" -gt "$deadline" ] && fail "e4 was not delivered within 10 s after the 500s ended"
  sleep 0.05
done
e4=$(of e4)
[ "$(cut -f4 <<<"$e4" | sort -u | wc -l)" = 1 ] || fail "e4's attempts carry several apns-ids: $(cut -f4 <<<"$e4" | tr '\n' ' ')"
times=($(cut -f1 <<<"$e4"))
[ $(( times[1] - times[0] )) -ge 900 ] || fail "the first retry came $(( times[1] - times[0] )) ms after the 500 (backoff 1 s)"
ok "e4: $(grep -c $'\t500\t' <<<"$e4") × 500, then 200; one apns-id; first retry $(( times[1] - times[0] )) ms later"

note "429 with Retry-After: no sooner than it says"
standin_control '{"answer": {"status": 429, "reason": "TooManyRequests", "retryAfter": 3}}'
event e5
deadline=$(( $(now_ms) + 5000 ))
until [ "$(of e5 | wc -l)" -ge 1 ]; do [ "$(now_ms)" -gt "$deadline" ] && fail "e5 was not attempted"; sleep 0.02; done
standin_control '{}'
deadline=$(( $(now_ms) + 10000 ))
until [ "$(of e5 | awk -F'\t' '$2 == 200' | wc -l)" = 1 ]; do
  [ "$(now_ms)" -gt "$deadline" ] && fail "e5 was not delivered within 10 s after the 429"
  sleep 0.05
done
times=($(of e5 | cut -f1))
[ "${#times[@]}" = 2 ] && [ $(( times[1] - times[0] )) -ge 2900 ] || fail "e5's retry: $(of e5 | cut -f1,2 | tr '\n' ' ') (Retry-After 3)"
ok "e5: 429, retried $(( times[1] - times[0] )) ms later (Retry-After: 3), 200"

note "a payload over 4,096 bytes loses its fields"
event e6 "$(repeat_char A 5000)"
deadline=$(( $(now_ms) + 5000 ))
until [ "$(of e6 | wc -l)" = 1 ]; do [ "$(now_ms)" -gt "$deadline" ] && fail "e6 was not pushed"; sleep 0.02; done
IFS=$'\t' read -r _ status _ _ _ _ _ _ _ _ _ omitted has_fields bytes _ <<<"$(of e6)"
[ "$status $omitted $has_fields" = "200 True False" ] && [ "$bytes" -le 4096 ] \
  || fail "e6: status $status, fieldsOmitted $omitted, fields $has_fields, $bytes bytes"
ok "e6: pushed in $bytes bytes, \"fieldsOmitted\": true, no fields"

note "content-available only: a background push"
api_ok "$PHONE" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"commands","subscriptionType":"query",
  "query":{"recordType":"RemoteCommand"},"notificationInfo":{"shouldSendContentAvailable":true}}}]}'
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"c1\",\"recordType\":\"RemoteCommand\",
  \"fields\":{\"action\":{\"value\":\"lock\"},\"timestamp\":{\"value\":$(now_ms)}}}}]}"
deadline=$(( $(now_ms) + 5000 ))
until [ "$(of c1 | wc -l)" = 1 ]; do [ "$(now_ms)" -gt "$deadline" ] && fail "c1 was not pushed"; sleep 0.02; done
IFS=$'\t' read -r _ status _ _ type priority collapse _ _ title badge _ _ _ mutable available _ <<<"$(of c1)"
[ "$status $type $priority $title $badge $mutable $available" = "200 background 5 - - - 1" ] && [ "$collapse" != - ] \
  || fail "c1 is not a background push: $(of c1)"
ok "c1: background, priority 5, collapse id $collapse, aps holds only content-available"

note "/metrics counts what the sender saw"
metrics=$(curl -s --max-time 10 "$NIMBUS_URL/metrics")
sample() { awk -v n="$1" '$1 == n {print $2; exit}' <<<"$metrics"; }
# 200s: e1–e6 and c1 to the phone (e3's 403 was renewed inside the client: one 200).
[ "$(sample nimbus_push_sent_total)" = 7 ] || fail "nimbus_push_sent_total is $(sample nimbus_push_sent_total), expected 7"
[ "$(sample 'nimbus_push_failed_total{reason="Unregistered"}')" = 1 ] && [ "$(sample 'nimbus_push_failed_total{reason="BadDeviceToken"}')" = 1 ] \
  && [ "$(sample 'nimbus_push_failed_total{reason="TooManyRequests"}')" = 1 ] \
  && [ "$(sample 'nimbus_push_failed_total{reason="InternalServerError"}')" -ge 2 ] \
  || fail "nimbus_push_failed_total: $(grep '^nimbus_push_failed_total' <<<"$metrics" | tr '\n' ' ')"
ok "/metrics: 7 sent; failed by reason Unregistered 1, BadDeviceToken 1, TooManyRequests 1, InternalServerError $(sample 'nimbus_push_failed_total{reason="InternalServerError"}')"
expect_no_server_errors

note "SIGTERM drains the sends in flight"
standin_control '{"delayMillis": 2000}'
event e7
deadline=$(( $(now_ms) + 5000 ))
until [ "$(of e7 | wc -l)" = 1 ]; do [ "$(now_ms)" -gt "$deadline" ] && fail "e7 was not sent"; sleep 0.02; done
stop_nimbus "$NIMBUS_PID" 20
status=$?
[ "$status" = 0 ] || fail "nimbus exited $status on SIGTERM with a push in flight"
[ "$(psql_db "SELECT count(*) FROM push_outbox")" = 0 ] || fail "the push in flight at SIGTERM was not recorded"
[ "$(psql_db "SELECT count(*) FROM push_log l JOIN notifications n ON n.notification_id = l.notification_id
              WHERE n.record_name = 'e7' AND l.outcome = 'delivered'")" = 1 ] || fail "e7's answer is not logged as delivered"
ok "SIGTERM with e7 in flight (answer held 2 s): exit 0 after its answer was recorded"
finish_scenario
