#!/usr/bin/env bash
# Push, direct: at least once, nothing lost (docs/api.md "At least once, nothing lost"; docs/push.md
# "The sender"), two real nimbus instances on one database against the APNs stand-in.
#
# - Two instances, happy path: 200 events written through one instance are pushed by both
#   senders together, each notification exactly once (claims skip each other's rows).
# - 1,000 events written while one instance is killed with SIGKILL mid-stream (its claimed pushes
#   wait out their lease) and the stand-in is down for 30 s (every attempt meanwhile fails and is
#   retried with backoff): all 1,000 notification ids reach the stand-in with 200 and the outbox
#   empties (the killed instance's claims after their 60 s lease); every attempt of a notification
#   carries one apns-id; duplicates (at least once) are counted and reported.
source "$(dirname "$0")/../lib.sh"
source "$IT_DIR/push.sh"

make_apns_key
standin_start
push_flags
start_store_server "${PUSH_FLAGS[@]}" --admin-listen off
A_PID=$NIMBUS_PID A_URL=$NIMBUS_URL
start_nimbus --database-url "$NIMBUS_DB_URL" "${PUSH_FLAGS[@]}" --admin-listen off
B_PID=$NIMBUS_PID B_URL=$NIMBUS_URL
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice iphone
PHONE_APNS=$(apns_token aa 1)
api_ok "$PHONE" tokens/register "{\"apnsEnvironment\":\"production\",\"apnsToken\":\"$PHONE_APNS\"}"
api_ok "$PHONE" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"blocked","subscriptionType":"query",
  "query":{"recordType":"BlockedAppEvent"},"notificationInfo":{"title":"App blocked"}}}]}'

events() { # PREFIX FROM TO [URL]: the Mac writes BlockedAppEvents PREFIX-FROM … PREFIX-TO in one request (through B)
  local ops="" i
  for ((i = $2; i <= $3; i++)); do
    ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"$1-$i\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"a$i\"}}}}"
  done
  NIMBUS_URL=${4:-$B_URL} api_ok "$MAC" records/modify "{\"operations\":[$ops]}"
}
# delivered PREFIX: notification ids of PREFIX's records the stand-in answered 200 (distinct).
delivered() { pushes "$PHONE_APNS" | awk -F'\t' -v p="$1-" '$2 == 200 && index($8, p) == 1 {print $9}' | sort -u | wc -l; }
wait_delivered() { # PREFIX COUNT SECONDS
  local deadline=$(( $(now_ms) + $3 * 1000 ))
  until [ "$(delivered "$1")" -ge "$2" ]; do
    [ "$(now_ms)" -gt "$deadline" ] && return 1
    sleep 0.2
  done
}

note "two instances, happy path: each notification pushed once"
for ((from = 1; from <= 200; from += 50)); do events h "$from" $((from + 49)); done
wait_delivered h 200 30 || fail "only $(delivered h) of 200 notifications delivered within 30 s"
sleep 1
requests=$(pushes "$PHONE_APNS" | awk -F'\t' 'index($8, "h-") == 1' | wc -l)
[ "$requests" = 200 ] || fail "200 notifications took $requests requests on the happy path (some pushed twice)"
ok "200 notifications, 200 requests, none twice, with two senders claiming"

note "1,000 events across kill -9 of an instance and a 30 s stand-in outage"
standin_control '{"delayMillis": 500}'
# Written through A, whose sender hears of them first and claims them: killed with its claims in flight.
for ((from = 1; from <= 300; from += 50)); do events k "$from" $((from + 49)) "$A_URL"; done
in_flight=$(psql_db "SELECT count(*) FROM push_outbox WHERE state = 'sending'")
kill -KILL "$A_PID"
wait "$A_PID" 2>/dev/null
# Answers held 500 ms: the senders' pushes were in flight together, as streams of few connections.
streams=$(pushes "$PHONE_APNS" | awk -F'\t' 'index($8, "k-") == 1 && $18 > max {max = $18} END {print max + 0}')
[ "$streams" -ge 20 ] || fail "at most $streams streams were open at once on a connection (the sender sends one at a time?)"
note "instance A killed with $in_flight pushes being sent (A's and B's), $(delivered k) of 300 at the stand-in; up to $streams streams open on one connection"
for ((from = 301; from <= 600; from += 50)); do events k "$from" $((from + 49)); done
standin_stop
note "stand-in down"
for ((from = 601; from <= 1000; from += 50)); do events k "$from" $((from + 49)); done
sleep 30
standin_control '{}'
standin_start "$STANDIN_PORT"
note "stand-in back on port $STANDIN_PORT; restarting instance A"
start_nimbus --database-url "$NIMBUS_DB_URL" "${PUSH_FLAGS[@]}" --admin-listen off
wait_delivered k 1000 100 || fail "only $(delivered k) of 1,000 notifications delivered within 100 s"
# The stand-in logs a request when it arrives: those A had in flight when killed count as delivered
# there, but A never saw the answer, so their rows wait out the 60 s lease and go again.
deadline=$(( $(now_ms) + 100000 ))
until [ "$(psql_db "SELECT count(*) FROM push_outbox")" = 0 ]; do
  [ "$(now_ms)" -gt "$deadline" ] && fail "the outbox still holds $(psql_db "SELECT count(*) FROM push_outbox") pushes 100 s later"
  sleep 0.5
done
all=$(pushes "$PHONE_APNS" | awk -F'\t' 'index($8, "k-") == 1')
ids_per_notification=$(awk -F'\t' '{print $9, $4}' <<<"$all" | sort -u | awk '{print $1}' | uniq -d | wc -l)
[ "$ids_per_notification" = 0 ] || fail "$ids_per_notification notifications were sent with more than one apns-id"
duplicates=$(awk -F'\t' '$2 == 200 {print $9}' <<<"$all" | sort | uniq -d | wc -l)
ok "1,000 of 1,000 notifications delivered ($(wc -l <<<"$all") requests, $duplicates delivered more than once); one apns-id per notification"
[ "$(psql_db "SELECT count(*) FROM push_log WHERE outcome = 'delivered'")" -ge 1200 ] || fail "the log holds fewer than 1,200 deliveries"

NIMBUS_URL=$B_URL expect_no_server_errors
finish_scenario
