#!/usr/bin/env bash
# Retention (issue 6), the command and the server's job with the real binary: events 31 and 29
# days old over HTTP; `nimbus prune --dry-run` prints per container/type/zone what it would delete
# and changes no row; `nimbus prune` prints what it deleted; `--tombstones-older-than 0s` and
# `--older-than 0s --record-type LockedAppList` print theirs; unreferenced assets go with
# `--asset-grace 0s`; bad durations exit 64 naming the flag; an interrupted prune (SIGTERM)
# resumes; `nimbus stats` shows records by type, tombstones, assets and devices; the server's own
# job (`--prune-interval 1s`) prunes an expired event within seconds. (What the API answers
# around a prune — tombstones for a token holder, CHANGE_TOKEN_EXPIRED for a token older than the
# expired tombstones, fresh fetches without them — is in-process: Tests/NimbusAPITests/RetentionTests.swift.)
source "$(dirname "$0")/../lib.sh"

DAY_MS=86400000
start_store_server --prune-interval 0s
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice phone
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
API_CONTAINER=iCloud.com.mirxa.AppLocker
NOW=$(now_ms)
OLD=$((NOW - 31 * DAY_MS)) RECENT=$((NOW - 29 * DAY_MS))

event() {  # event NAME TYPE TIMESTAMP: a create operation
  printf '{"operationType":"create","record":{"recordName":"%s","recordType":"%s","fields":{"appName":{"value":"Safari"},"bundleID":{"value":"com.apple.Safari"},"timestamp":{"value":%s,"type":"TIMESTAMP"}}}}' "$1" "$2" "$3"
}
changes() {  # changes TOKEN [SYNC_TOKEN]: records/changes of _defaultZone
  local body='{"zoneID":{"zoneName":"_defaultZone"},"resultsLimit":400'
  [ -n "${2:-}" ] && body+=",\"syncToken\":\"$2\""
  api "$1" records/changes "$body}"
}
live_names() {  # live_names: the live records of _defaultZone, sorted, space-separated
  changes "$PHONE"
  expect_status 200 "records/changes without a token"
  record_summary | awk '$2 != "-" {print $1}' | sort | tr '\n' ' ' | sed 's/ $//'
}
prune() { run_prune "$@"; }
line_for() { prune_line iCloud.com.mirxa.AppLocker alice "$1" "$2"; }

note "events 31 and 29 days old, a locked-app list, a photo (asset) on an old failed-auth event"
api_ok "$MAC" assets/upload '{"tokens":[{"recordType":"FailedAuthEvent","fieldName":"photoAsset"}]}'
upload_url=$(json_field url) || fail "assets/upload gave no url: $HTTP_BODY"
head -c 4321 /dev/urandom >"$TEST_TMP/photo"
HTTP_STATUS=$(curl -sS --max-time 20 -o "$TEST_TMP/upload" -w '%{http_code}' -H "Authorization: Bearer $MAC" \
  --data-binary @"$TEST_TMP/photo" "$upload_url")
[ "$HTTP_STATUS" = 200 ] || fail "upload: $HTTP_STATUS $(cat "$TEST_TMP/upload")"
upload=$(cat "$TEST_TMP/upload")
photo="{\"fileChecksum\":\"$(json_field fileChecksum "$upload")\",\"size\":$(json_field size "$upload"),\"receipt\":\"$(json_field receipt "$upload")\"}"
api_ok "$MAC" records/modify "{\"operations\":[$(event old-1 BlockedAppEvent $OLD),$(event old-2 BlockedAppEvent $OLD),$(event recent-1 BlockedAppEvent $RECENT),$(event recent-2 FailedAuthEvent $RECENT),{\"operationType\":\"create\",\"record\":{\"recordName\":\"old-auth\",\"recordType\":\"FailedAuthEvent\",\"fields\":{\"timestamp\":{\"value\":$OLD,\"type\":\"TIMESTAMP\"},\"photoAsset\":{\"value\":$photo,\"type\":\"ASSETID\"}}}},{\"operationType\":\"create\",\"record\":{\"recordName\":\"locked-mac\",\"recordType\":\"LockedAppList\",\"fields\":{\"deviceName\":{\"value\":\"mac\"},\"updatedAt\":{\"value\":$OLD,\"type\":\"TIMESTAMP\"}}}}]}"
expect_item_codes "ok ok ok ok ok ok" "creating the events"

note "nimbus prune --dry-run: what it would delete, per container, type and zone; nothing changes"
before_rows=$(psql_db "SELECT count(*) FILTER (WHERE deleted) || '/' || count(*) || '/' || max(change_seq) FROM records")
prune --dry-run
[ "$PRUNE_STATUS" = 0 ] || fail "prune --dry-run exited $PRUNE_STATUS: $PRUNE_OUT $PRUNE_ERR"
contains "$PRUNE_OUT" -q "dry run" || fail "the dry run does not say so: $PRUNE_OUT"
[[ $(line_for _defaultZone BlockedAppEvent) == *"would delete records=2 tombstones=0"* ]] || fail "dry run BlockedAppEvent line: $PRUNE_OUT"
[[ $(line_for _defaultZone FailedAuthEvent) == *"would delete records=1 tombstones=0"* ]] || fail "dry run FailedAuthEvent line: $PRUNE_OUT"
[ -z "$(line_for _defaultZone LockedAppList)" ] || fail "the dry run would prune LockedAppList (no policy): $PRUNE_OUT"
contains "$PRUNE_OUT" -q "^assets: would delete 0 (0 bytes)" || fail "dry run assets line: $PRUNE_OUT"
after_rows=$(psql_db "SELECT count(*) FILTER (WHERE deleted) || '/' || count(*) || '/' || max(change_seq) FROM records")
[ "$before_rows" = "$after_rows" ] || fail "the dry run changed the records table: $before_rows -> $after_rows"
ok "dry run: 'would delete' lines for BlockedAppEvent (2) and FailedAuthEvent (1) in _defaultZone; nothing changed"

note "nimbus prune: deletes, and says what"
prune
[ "$PRUNE_STATUS" = 0 ] || fail "prune exited $PRUNE_STATUS: $PRUNE_OUT $PRUNE_ERR"
[[ $(line_for _defaultZone BlockedAppEvent) == *": deleted records=2 tombstones=0"* ]] || fail "prune BlockedAppEvent line: $PRUNE_OUT"
[[ $(line_for _defaultZone FailedAuthEvent) == *": deleted records=1 tombstones=0"* ]] || fail "prune FailedAuthEvent line: $PRUNE_OUT"
contains "$PRUNE_OUT" -q "^done in " || fail "prune printed no 'done in' line: $PRUNE_OUT"
ok "prune printed the deleted lines for BlockedAppEvent (2) and FailedAuthEvent (1) and its time"

note "the photo of the pruned event: kept for the grace period, then collected"
prune --asset-grace 0s
[ "$PRUNE_STATUS" = 0 ] || fail "prune --asset-grace 0s exited $PRUNE_STATUS: $PRUNE_ERR"
contains "$PRUNE_OUT" -q "^assets: deleted 1 (4321 bytes)" || fail "the unreferenced photo was not collected: $PRUNE_OUT"
ok "the unreferenced photo (4321 bytes) collected with --asset-grace 0s"

note "nimbus prune --tombstones-older-than 0s"
sleep 0.01
prune --tombstones-older-than 0s
[ "$PRUNE_STATUS" = 0 ] || fail "prune --tombstones-older-than 0s exited $PRUNE_STATUS: $PRUNE_ERR"
[[ $(line_for _defaultZone BlockedAppEvent) == *": deleted records=0 tombstones=2"* ]] || fail "tombstone line: $PRUNE_OUT"
ok "--tombstones-older-than 0s printed the expired tombstones"

note "nimbus prune --older-than 0s --record-type LockedAppList: even a type without a policy"
prune --older-than 0s --record-type LockedAppList
[ "$PRUNE_STATUS" = 0 ] || fail "prune --older-than 0s --record-type LockedAppList exited $PRUNE_STATUS: $PRUNE_ERR"
[[ $(line_for _defaultZone LockedAppList) == *": deleted records=1 "* ]] || fail "LockedAppList line: $PRUNE_OUT"
ok "--older-than 0s --record-type LockedAppList pruned locked-mac, nothing else"

note "bad durations and arguments: exit 64 naming the flag"
for args in "--older-than 30x" "--older-than -1d" "--tombstones-older-than -1d" "--tombstones-older-than 1.5d" "--asset-grace 5w" "--older-than=" ; do
  flag=${args%% *}; flag=${flag%%=*}
  # shellcheck disable=SC2086
  prune $args
  [ "$PRUNE_STATUS" = 64 ] || fail "prune $args exited $PRUNE_STATUS (want 64): $PRUNE_OUT $PRUNE_ERR"
  contains "$PRUNE_ERR" -q -- "$flag" || fail "prune $args: the error does not name $flag: $PRUNE_ERR"
done
prune --record-type 'Bad Type'
[ "$PRUNE_STATUS" = 64 ] || fail "prune --record-type 'Bad Type' exited $PRUNE_STATUS: $PRUNE_ERR"
[ "$(live_names)" = "recent-1 recent-2" ] || fail "a refused prune changed something: $(live_names)"
ok "30x, -1d, 1.5d, 5w, empty and a bad record type: exit 64 with the flag named; nothing changed"

note "an interrupted prune resumes: 150,000 expired events in zone Bulk, SIGTERM mid-way, run again"
# Enough that the prune still runs well past its first progress line (due after 2 s): 30,000 were
# done in 2.2 s on a quiet machine once, and a CI run deleted 47,500 by its first progress line and
# all 60,000 before the SIGTERM. The SIGTERM comes as soon as that line is readable.
BULK=150000
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Bulk"}}}]}'
insert_expired_events Bulk "$BULK" "$OLD" || fail "bulk insert failed"
prune --dry-run
[ "$PRUNE_STATUS" = 0 ] || fail "prune --dry-run exited $PRUNE_STATUS: $PRUNE_ERR"
would=$(line_for Bulk BlockedAppEvent)
# The dry run counts a whole zone, not only its first batch of 500.
[[ $would == *"would delete records=$BULK "* ]] || defer_fail "the dry run of a zone with $BULK expired events says: '$would'"
"$NIMBUS_BIN" prune --database-url "$NIMBUS_DB_URL" >"$TEST_TMP/interrupted.out" 2>&1 &
prune_pid=$!
track_pid "$prune_pid"
prune_started=$(now_ms)
# Past 2 s a progress line is due ("progress line on long runs"): it must be readable while the
# prune runs (stdout to a file or a pipe, as under systemd or `| tee`), not only at exit.
bulk_gone=0
while process_alive "$prune_pid"; do
  bulk_gone=$(psql_db "SELECT count(*) FROM records WHERE record_name LIKE 'bulk-%' AND deleted")
  [ "$bulk_gone" -gt 0 ] && grep -q '^pruned [0-9]* records so far' "$TEST_TMP/interrupted.out" && break
  [ $(( $(now_ms) - prune_started )) -ge 3000 ] && [ "$bulk_gone" -gt 0 ] && break
  [ $(( $(now_ms) - prune_started )) -ge 30000 ] && break
  sleep 0.05
done
if process_alive "$prune_pid"; then
  grep -q '^pruned [0-9]* records so far' "$TEST_TMP/interrupted.out" \
    || defer_fail "no progress line readable after $(( $(now_ms) - prune_started )) ms of a running prune (stdout to a file holds: '$(head -c 200 "$TEST_TMP/interrupted.out")')"
fi
# SIGTERM (as from systemd or kill): a background job of a script ignores SIGINT (bash sets
# SIG_IGN for asynchronous commands without job control), so ^C cannot be simulated here.
kill -TERM "$prune_pid" 2>/dev/null
seen_at_signal=$bulk_gone
wait_exit "$prune_pid" 20
interrupted_status=$?
bulk_gone=$(psql_db "SELECT count(*) FROM records WHERE record_name LIKE 'bulk-%' AND deleted")
[ "$bulk_gone" -gt 0 ] && [ "$bulk_gone" -lt "$BULK" ] || fail "the prune was not interrupted mid-way (SIGTERM after $seen_at_signal; $bulk_gone of $BULK deleted, status $interrupted_status): $(cat "$TEST_TMP/interrupted.out")"
note "SIGTERM after $seen_at_signal deletions; the prune exited with status $interrupted_status after $bulk_gone of $BULK"
prune
[ "$PRUNE_STATUS" = 0 ] || fail "the resumed prune exited $PRUNE_STATUS: $PRUNE_ERR"
resumed=$(line_for Bulk BlockedAppEvent | sed -n 's/.*deleted records=\([0-9]*\) .*/\1/p')
[ "$((bulk_gone + ${resumed:-0}))" = "$BULK" ] || fail "interrupted $bulk_gone + resumed ${resumed:-0} != $BULK: $PRUNE_OUT"
bulk_left=$(psql_db "SELECT count(*) FROM records WHERE record_name LIKE 'bulk-%' AND NOT deleted")
[ "$bulk_left" = 0 ] || fail "$bulk_left bulk records survived the resumed prune"
took=$(printf '%s\n' "$PRUNE_OUT" | sed -n 's/^done in \([0-9.]*\) s$/\1/p')
if awk -v t="${took:-0}" 'BEGIN {exit !(t > 3)}'; then
  contains "$PRUNE_OUT" -q "^pruned [0-9]* records so far" || fail "a ${took}s prune printed no progress line: $PRUNE_OUT"
fi
ok "interrupted after $bulk_gone, the next run deleted the other ${resumed} (total $BULK, none twice) in ${took}s"

note "nimbus stats: records by type, tombstones, assets, devices' last sync"
api_ok "$PHONE" users/current
stats=$(nimbus_admin stats) || exit 1
line=$(contains "$stats" -a "^alice iCloud.com.mirxa.AppLocker development: ") || fail "stats has no line for alice's AppLocker database: $stats"
[[ $line == *"records[BlockedAppEvent=1 FailedAuthEvent=1]"* ]] || fail "stats records by type: $line"
[[ $line == *"tombstones=$((BULK + 1))"* ]] || fail "stats tombstones (locked-mac and $BULK bulk events): $line"
[[ $line == *"assets=0 bytes=0"* ]] || fail "stats assets: $line"
[[ $line == *"oldest-event-expires="* ]] || fail "stats oldest event: $line"
contains "$stats" -q "^device alice/mac $MAC_ID: last-sync=[0-9]*s ago" || fail "stats lacks the mac's last sync: $stats"
contains "$stats" -q "^device alice/phone $PHONE_ID: last-sync=" || fail "stats lacks the phone: $stats"
ok "stats: $line"

note "the server's own job: --prune-interval 1s prunes an expired event within ~5 s"
stop_nimbus || fail "the first server did not stop cleanly"
# A mistyped duration must stop `serve` (exit 64 naming the flag) rather than silently turn the
# pruning job off or fall back to a default.
for args in "--prune-interval 30x" "--asset-grace 1w"; do
  # shellcheck disable=SC2086
  "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url "$NIMBUS_DB_URL" $args >"$TEST_TMP/bad-serve.log" 2>&1 &
  bad_pid=$!
  track_pid "$bad_pid"
  bad_status=124
  for ((i = 0; i < 200; i++)); do
    if ! process_alive "$bad_pid"; then wait "$bad_pid"; bad_status=$?; break; fi
    grep -q 'listening on' "$TEST_TMP/bad-serve.log" && break
    sleep 0.05
  done
  if [ "$bad_status" = 124 ]; then
    stop_nimbus "$bad_pid" 10
    defer_fail "nimbus serve $args kept running (the flag was ignored): $(grep -a -i 'prun\|grace' "$TEST_TMP/bad-serve.log" | head -n 2 | tr '\n' ' ')"
  elif [ "$bad_status" != 64 ] || ! grep -q -- "${args%% *}" "$TEST_TMP/bad-serve.log"; then
    defer_fail "nimbus serve $args exited $bad_status without naming ${args%% *}: $(head -c 300 "$TEST_TMP/bad-serve.log")"
  else
    ok "nimbus serve $args: exit 64 naming ${args%% *}"
  fi
done
start_nimbus --database-url "$NIMBUS_DB_URL" --prune-interval 1s --log-level info
api_ok "$MAC" records/modify "{\"operations\":[$(event job-old BlockedAppEvent $OLD),$(event job-new BlockedAppEvent $NOW)]}"
expect_item_codes "ok ok" "events for the job"
start=$(now_ms)
gone=""
while [ $(( $(now_ms) - start )) -lt 5000 ]; do
  api_ok "$MAC" records/lookup '{"records":[{"recordName":"job-old"},{"recordName":"job-new"}]}'
  if [ "$(item_codes | tr '\n' ' ')" = "NOT_FOUND ok " ]; then gone=$(( $(now_ms) - start )); break; fi
  sleep 0.2
done
[ -n "$gone" ] || fail "the pruning job did not delete an expired event within 5 s (log: $(tail -5 "$NIMBUS_LOG"))"
ok "the pruning job deleted job-old after ${gone} ms and kept job-new"
expect_no_server_errors
finish_scenario
