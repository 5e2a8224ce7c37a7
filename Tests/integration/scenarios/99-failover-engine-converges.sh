#!/usr/bin/env bash
# A NimbusKit engine syncing through a failover (issue 33): deploy/ha/ and two instances as in
# scenario 96 (Tests/integration/failover.sh). Device 1 runs `nimbus-sync send` (NimbusKit's
# SyncEngine, Examples/NimbusSyncTool) of 800 records, 10 per request, through instance A; device 2
# runs `nimbus-sync watch` (the engine's live mode: long-polls) through instance B. The leader's
# postmaster is killed (kill -9) while the outbox drains. Then:
#   - the sender's outbox empties (the engine retried what answered 503), none failed;
#   - the watcher applied each of the 800 records exactly once: it converged without a token reset
#     (a reset re-fetches the zone: every record would be applied again);
#   - a fresh engine fetching from no token gets the same 800: the server holds what both hold.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../proxies.sh"
source "$(dirname "$0")/../failover.sh"

SYNC_BIN=${NIMBUS_SYNC_BIN:-$NIMBUS_CLIENT_BIN_DIR/nimbus-sync}
[ -x "$SYNC_BIN" ] || fail "no nimbus-sync at $SYNC_BIN (swift build --product nimbus-sync)"
failover_setup
issue_token SENDER alice engine-sender
issue_token WATCHER alice engine-watcher
issue_token FRESH alice engine-fresh
export NIMBUS_CONTAINER=iCloud.com.nimbus.SyncTool NIMBUS_ENVIRONMENT=development

NIMBUS_URL=$B_URL NIMBUS_TOKEN=$WATCHER "$SYNC_BIN" watch "$TEST_TMP/watcher.state" 75 >"$TEST_TMP/watch.out" 2>"$TEST_TMP/watch.err" &
WATCH_PID=$!
track_pid "$WATCH_PID"
deadline=$(( $(now_ms) + 20000 ))
until grep -q '^watching' "$TEST_TMP/watch.out"; do
  [ "$(now_ms)" -lt "$deadline" ] || fail "the watcher did not start: $(tail -n 3 "$TEST_TMP/watch.err")"
  sleep 0.1
done
NIMBUS_URL=$A_URL NIMBUS_TOKEN=$SENDER "$SYNC_BIN" enqueue "$TEST_TMP/sender.state" 800 ev >"$TEST_TMP/enqueue.out" 2>&1 \
  || fail "nimbus-sync enqueue failed: $(tail -n 3 "$TEST_TMP/enqueue.out")"
NIMBUS_URL=$A_URL NIMBUS_TOKEN=$SENDER timeout 120 "$SYNC_BIN" send "$TEST_TMP/sender.state" 10 80 >"$TEST_TMP/send.out" 2>"$TEST_TMP/send.err" &
SEND_PID=$!
track_pid "$SEND_PID"
sleep 3
leader=$(ha_leader)
grep -q '^pending' "$TEST_TMP/send.out" || fail "the sender has not started sending: $(tail -n 3 "$TEST_TMP/send.err")"
kill -KILL "$(ha_postmaster "$leader")"
note "kill -9 of $leader's postmaster with $(tail -n 1 "$TEST_TMP/send.out") records still in the outbox"
new=$(_ha_wait_new_leader "$leader" 60) || fail "no new leader within 60 s"
wait_exit "$SEND_PID" 100 || fail "the sender did not empty its outbox: $(tail -n 2 "$TEST_TMP/send.out") $(tail -n 3 "$TEST_TMP/send.err")"
grep -q '^sent$' "$TEST_TMP/send.out" || fail "the sender ended without 'sent': $(tail -n 3 "$TEST_TMP/send.err")"
NIMBUS_URL=$A_URL NIMBUS_TOKEN=$SENDER "$SYNC_BIN" status "$TEST_TMP/sender.state" >"$TEST_TMP/status.out" 2>&1
grep -q '^failed: 0$' "$TEST_TMP/status.out" || fail "the sender has failed records: $(cat "$TEST_TMP/status.out")"
ok "$new leads; the sender's outbox emptied through the failover, nothing failed ($(grep -c 'nimbus-sync:' "$TEST_TMP/send.err") errors retried)"

applied_names() { sed -n 's/^applied \(ev-[^ ]*\) .*/\1/p' "$TEST_TMP/watch.out"; }
deadline=$(( $(now_ms) + 60000 ))
until [ "$(applied_names | sort -u | wc -l)" -ge 800 ]; do
  [ "$(now_ms)" -lt "$deadline" ] || fail "the watcher applied $(applied_names | sort -u | wc -l) of 800 records within 60 s after the send"
  sleep 0.2
done
total=$(applied_names | wc -l) distinct=$(applied_names | sort -u | wc -l)
[ "$total" = 800 ] && [ "$distinct" = 800 ] || fail "the watcher applied $total records, $distinct distinct: a token reset re-fetched the zone?"
ok "the watcher (live mode through B) applied each of the 800 records exactly once: no token reset"
NIMBUS_URL=$B_URL NIMBUS_TOKEN=$FRESH "$SYNC_BIN" fetch "$TEST_TMP/fresh.state" >"$TEST_TMP/fresh.out" 2>&1 || fail "a fresh fetch failed: $(tail -n 3 "$TEST_TMP/fresh.out")"
[ "$(tail -n 1 "$TEST_TMP/fresh.out")" = "applied 800" ] || fail "a fresh engine fetched '$(tail -n 1 "$TEST_TMP/fresh.out")', expected applied 800"
ok "a fresh engine fetching from no token gets the same 800 records: sender, watcher and server converge"
kill -TERM "$WATCH_PID" 2>/dev/null
