#!/usr/bin/env bash
# What operators see of push (docs/push.md "For operators", docs/operations.md "The push delivery
# log"), against the real binary with push on and no APNs reachable (the key and address go by
# environment only, as in scenario 46; the sender's own no-answer attempts are set aside before
# the log is read):
# - `nimbus push log` with nothing logged says so; with log entries (written to push_log here, as
#   the sender would) it prints them newest first with every column, per user, per device token,
#   and --limit cuts them;
# - an unknown user or token id exits 1 naming it; a bad --limit, a user with --token-id, and a
#   missing subcommand exit 64 saying what is wrong;
# - /metrics counts the queued pushes and reads the queue's depth and age from the database.
source "$(dirname "$0")/../lib.sh"

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TEST_TMP/apns.p8" 2>/dev/null || fail "openssl genpkey failed"
export NIMBUS_APNS_KEY_FILE="$TEST_TMP/apns.p8" NIMBUS_APNS_KEY_ID=KEY1234567 NIMBUS_APNS_TEAM_ID=TEAM123456 NIMBUS_APNS_URL=https://127.0.0.1:1
start_store_server --push direct --apns-topics "$API_CONTAINER=com.mirxa.AppLocker"
nimbus_admin user add anna >/dev/null
nimbus_admin user add bob >/dev/null
issue_token MAC anna mac
issue_token WATCH anna watch

# push_log ARGS...: `nimbus push log ARGS`; sets LOG_OUT, LOG_ERR and LOG_STATUS.
push_log() {
  LOG_OUT=$("$NIMBUS_BIN" push log "$@" --database-url "$NIMBUS_DB_URL" 2>"$TEST_TMP/push-log-stderr")
  LOG_STATUS=$?
  LOG_ERR=$(cat "$TEST_TMP/push-log-stderr")
}

push_log
[ "$LOG_STATUS" = 0 ] && [ "$LOG_OUT" = "no pushes logged" ] || fail "push log with nothing logged: $LOG_STATUS '$LOG_OUT' $LOG_ERR"
ok "nimbus push log with nothing logged says so"

note "the watch registers; the mac subscribes and writes 2 events: 2 pushes queued for the watch"
api_ok "$WATCH" tokens/register '{"apnsEnvironment":"development","apnsToken":"0123456789abcdef0123456789abcdef"}'
api_ok "$MAC" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"sub-events","subscriptionType":"query","query":{"recordType":"Event"},"firesOn":["create"],"notificationInfo":{"title":"Event"}}}]}'
api_ok "$MAC" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"e1","recordType":"Event","fields":{}}},{"operationType":"create","record":{"recordName":"e2","recordType":"Event","fields":{}}}]}'
[ "$(psql_db "SELECT count(*) FROM push_outbox")" = 2 ] || fail "the writes queued $(psql_db "SELECT count(*) FROM push_outbox") pushes, not 2"
sleep 1.1
[ "$(metric nimbus_push_queued_total)" = 2 ] || fail "nimbus_push_queued_total is '$(metric nimbus_push_queued_total)', not 2"
[ "$(metric nimbus_push_queue_depth)" = 2 ] || fail "nimbus_push_queue_depth is '$(metric nimbus_push_queue_depth)', not 2"
age=$(metric nimbus_push_queue_oldest_age_seconds)
awk -v a="$age" 'BEGIN {exit !(a >= 1 && a < 60)}' || fail "nimbus_push_queue_oldest_age_seconds is '$age', not the ~1 s the oldest push has waited"
for series in nimbus_push_sent_total nimbus_push_skipped_long_poll_total; do
  [ "$(metric $series)" = 0 ] || fail "$series is '$(metric $series)', not 0"
done
metrics_text=$(curl -s --max-time 5 "$NIMBUS_URL/metrics")
grep -q "^# TYPE nimbus_push_failed_total counter$" <<<"$metrics_text" || fail "/metrics lacks nimbus_push_failed_total: $metrics_text"
ok "/metrics: 2 queued, queue depth 2, the oldest waiting ${age} s, nothing sent or failed"

# The sender runs (nothing answers at the APNs URL): its no-answer retries would add log lines.
# Push the two pushes an hour out with a claim count no sender holds (a late outcome of a claim
# in flight is then only logged), let such an outcome land, and start the log empty.
psql_db "UPDATE push_outbox SET due_at = now() + interval '1 hour', state = 'queued', attempts = attempts + 100" >/dev/null
sleep 0.5
psql_db "DELETE FROM push_log" >/dev/null

note "three outcomes logged for the watch, as the sender and the long-poll would"
NOTIFICATION=$(psql_db "SELECT notification_id FROM push_outbox ORDER BY id LIMIT 1")
ANNA=$(psql_db "SELECT id FROM users WHERE name = 'anna'")
psql_db "INSERT INTO push_log (at, user_id, device_token_id, container, environment, notification_id, push_type, outcome, status, reason, attempts, by_long_poll)
         VALUES ('2026-01-01T10:00:00Z', $ANNA, '$WATCH_ID', '$API_CONTAINER', 'development', '$NOTIFICATION', 'alert', 'retry', 503, 'ServiceUnavailable', 1, false),
                ('2026-01-01T10:00:02Z', $ANNA, '$WATCH_ID', '$API_CONTAINER', 'development', '$NOTIFICATION', 'alert', 'delivered', 200, NULL, 2, false),
                ('2026-01-01T10:00:03Z', $ANNA, '$WATCH_ID', '$API_CONTAINER', 'development', '$NOTIFICATION', 'alert', 'long-poll', NULL, NULL, 0, true)"
push_log anna
[ "$LOG_STATUS" = 0 ] || fail "push log anna: exit $LOG_STATUS: $LOG_ERR"
[ "$(printf '%s\n' "$LOG_OUT" | wc -l)" = 3 ] || fail "push log anna printed $(printf '%s\n' "$LOG_OUT" | wc -l) lines, not 3: $LOG_OUT"
outcomes=$(printf '%s\n' "$LOG_OUT" | grep -o 'outcome=[a-z-]*' | tr '\n' ' ')
[ "$outcomes" = "outcome=long-poll outcome=delivered outcome=retry " ] || fail "push log anna is not newest first: $outcomes"
expected=$(printf '2026-01-01T10:00:00Z\tuser=anna\tdevice=watch\ttoken-id=%s\tcontainer=%s\tenvironment=development\tnotification=%s\ttype=alert\toutcome=retry\tstatus=503\treason=ServiceUnavailable\tattempts=1\tlong-poll-first=no' \
  "$WATCH_ID" "$API_CONTAINER" "$NOTIFICATION")
[ "$(printf '%s\n' "$LOG_OUT" | sed -n 3p)" = "$expected" ] || fail "the retry's line is '$(printf '%s\n' "$LOG_OUT" | sed -n 3p)', not '$expected'"
contains "$(printf '%s\n' "$LOG_OUT" | sed -n 1p)" -q $'status=-\treason=-\tattempts=0\tlong-poll-first=yes' || fail "the long-poll line: $LOG_OUT"
ok "push log USER: newest first, every column (time, device, notification, type, outcome, status, reason, attempts, long-poll first)"

push_log --token-id "$WATCH_ID" --limit 2
[ "$LOG_STATUS" = 0 ] && [ "$(printf '%s\n' "$LOG_OUT" | wc -l)" = 2 ] || fail "push log --token-id WATCH --limit 2: $LOG_STATUS $LOG_OUT $LOG_ERR"
push_log --token-id "$MAC_ID"
[ "$LOG_STATUS" = 0 ] && [ "$LOG_OUT" = "no pushes logged" ] || fail "push log --token-id MAC: $LOG_STATUS '$LOG_OUT' $LOG_ERR"
push_log bob
[ "$LOG_STATUS" = 0 ] && [ "$LOG_OUT" = "no pushes logged" ] || fail "push log bob: $LOG_STATUS '$LOG_OUT' $LOG_ERR"
push_log --limit 1
[ "$LOG_STATUS" = 0 ] && contains "$LOG_OUT" -q 'outcome=long-poll' && [ "$(printf '%s\n' "$LOG_OUT" | wc -l)" = 1 ] || fail "push log --limit 1: $LOG_OUT"
ok "push log --token-id and --limit: that device's entries, as many as asked"

expect_cli_error() { # STATUS TEXT WHAT: the last push_log exited STATUS and its error says TEXT
  [ "$LOG_STATUS" = "$1" ] || fail "$3: exit $LOG_STATUS (expected $1): $LOG_ERR"
  [[ $LOG_ERR == *"$2"* ]] || fail "$3: the error does not say '$2': $LOG_ERR"
  ok "$3: exit $1, '$2'"
}
push_log carol
expect_cli_error 1 "There is no user named carol." "an unknown user"
push_log --token-id tok_nothing
expect_cli_error 1 "There is no device token tok_nothing." "an unknown token id"
push_log --token-id nothing
expect_cli_error 64 "option '--token-id' needs a device token id" "a malformed token id"
push_log anna --token-id "$WATCH_ID"
expect_cli_error 64 "give a user or --token-id, not both" "a user and --token-id"
for bad in 0 1001 ten -3; do
  push_log --limit "$bad"
  expect_cli_error 64 "option '--limit' needs a whole number from 1 to 1000, not '$bad'" "--limit $bad"
done
LOG_ERR=$("$NIMBUS_BIN" push --database-url "$NIMBUS_DB_URL" 2>&1 >/dev/null); LOG_STATUS=$?
[ "$LOG_STATUS" = 64 ] || fail "nimbus push without a subcommand: exit $LOG_STATUS"
help=$("$NIMBUS_BIN" push --help) || fail "nimbus push --help failed"
contains "$help" -q 'nimbus push log \[<user> | --token-id <id>\] \[--limit <n>\]' || fail "push --help lacks the usage: $help"
ok "nimbus push without a subcommand exits 64; push --help shows the usage"

expect_no_server_errors
finish_scenario
