#!/usr/bin/env bash
# NimbusKitCK's CKSyncEngine (issue 32): Examples/CKSyncEngineSample, written only against Apple's
# CKSyncEngine API in the shape of Apple's sample app, run as a Mac and a phone (separate processes,
# each with its own engine state) against the real server:
# - added contacts are sent and fetched by the other device;
# - a process killed after state.add (before sending) sends its changes on the next launch, once;
# - a process killed while sending loses nothing and duplicates nothing;
# - a stale edit meets serverRecordChanged, handled in handleEvent (keep ours, re-add the save);
# - a delete reaches the other device; automatic sync (the live long-poll) brings a new contact;
# - a zone deleted on one device is emptied on the other, and a later save recreates it;
# - at the end both replicas equal the server.
source "$(dirname "$0")/../lib.sh"

APP=${CKSYNCENGINE_SAMPLE_BIN:-$NIMBUS_CLIENT_BIN_DIR/CKSyncEngineSample}
[ -x "$APP" ] || fail "no CKSyncEngineSample binary at $APP (swift build builds it)"

start_store_server
nimbus_admin user add anna >/dev/null
issue_token MAC anna mac
issue_token PHONE anna iphone
export NIMBUS_URL NIMBUS_CONTAINER=iCloud.com.nimbus.CKSyncEngineSample

mac() { NIMBUS_TOKEN=$MAC NIMBUS_STATE_DIR="$TEST_TMP/mac/state" timeout 60 "$APP" "$TEST_TMP/mac" "$@"; }
phone() { NIMBUS_TOKEN=$PHONE NIMBUS_STATE_DIR="$TEST_TMP/phone/state" timeout 60 "$APP" "$TEST_TMP/phone" "$@"; }
saved_count() { grep -c "^saved $1\$" "$TEST_TMP/mac/sent.log"; }

# MARK: a bad NIMBUS_ENCRYPTED_ASSET_FIELDS entry stops the program with an error naming it
NIMBUS_TOKEN=$MAC NIMBUS_STATE_DIR="$TEST_TMP/bad/state" NIMBUS_ENCRYPTED_ASSET_FIELDS="Contact.photo,bad" timeout 60 "$APP" \
    "$TEST_TMP/bad" sync 2>"$TEST_TMP/bad.err" && fail "a bad NIMBUS_ENCRYPTED_ASSET_FIELDS was accepted"
grep -q 'NIMBUS_ENCRYPTED_ASSET_FIELDS entry 2 "bad" is not Type.field' "$TEST_TMP/bad.err" || fail "unclear error: $(cat "$TEST_TMP/bad.err")"

# MARK: add and fetch
mac add v1 ada bea cy || fail "mac add failed"
for name in ada bea cy; do [ "$(saved_count $name)" = 1 ] || fail "$name was reported saved $(saved_count $name) times"; done
phone sync || fail "phone sync failed"
[ "$(phone list | tr '\n' ' ')" = "ada v1 bea v1 cy v1 " ] || fail "the phone has: $(phone list | tr '\n' ' ')"
ok "contacts added on the Mac are sent once each and fetched by the phone"

# MARK: killed after state.add, before sending
mac add-and-kill v2 dee eve
status=$?
[ "$status" = 137 ] || fail "add-and-kill exited $status, not killed (137)"
[ "$(mac pending)" = 2 ] || fail "after the kill the Mac has $(mac pending) pending changes, not 2"
mac sync || fail "mac sync after the kill failed"
for name in dee eve; do [ "$(saved_count $name)" = 1 ] || fail "$name was reported saved $(saved_count $name) times after the kill"; done
[ "$(mac pending)" = 0 ] || fail "the Mac still has pending changes after sending"
ok "changes added before a kill are restored from the state serialization and sent once"

# MARK: killed while sending
names=$(seq -f 'k%02g' 1 40 | tr '\n' ' ')
# shellcheck disable=SC2086
mac kill-while-sending 40 v3 $names
status=$?
[ "$status" = 137 ] || fail "kill-while-sending exited $status"
mac sync || fail "mac sync after the kill while sending failed"
[ "$(mac pending)" = 0 ] || fail "the Mac still has pending changes after the second send"
phone sync || fail "phone sync failed"
[ "$(phone list | grep -c '^k.. v3$')" = 40 ] || fail "the phone has $(phone list | grep -c '^k.. v3$') of the 40 contacts sent during a kill"
ok "a kill while sending loses nothing: all 40 contacts reach the phone"

# MARK: a conflict handled in handleEvent
phone set ada from-phone >/dev/null || fail "phone set failed"
out=$(mac set ada from-mac) || fail "mac set failed: $out"
[ "$out" = "conflicts 1" ] || fail "the Mac handled '$out', not one serverRecordChanged"
phone sync || fail "phone sync failed"
[ "$(phone list | grep '^ada ')" = "ada from-mac" ] || fail "after the conflict the phone has $(phone list | grep '^ada ')"
ok "a stale save meets serverRecordChanged with the server record; handleEvent merges and the save goes again"

# MARK: delete, then automatic sync through the live long-poll
mac delete bea || fail "mac delete failed"
phone sync || fail "phone sync failed"
phone list | grep -q '^bea ' && fail "the phone still has bea after the Mac deleted it"
expected=$(( $(phone list | wc -l) + 1 ))
phone watch 30 "$expected" >"$TEST_TMP/watch.out" &
watcher=$!
sleep 2
mac add v4 zed || fail "mac add zed failed"
wait "$watcher"
[ "$(cat "$TEST_TMP/watch.out")" = "$expected" ] || fail "automatic sync brought the phone to $(cat "$TEST_TMP/watch.out") contacts, not $expected"
ok "a delete reaches the phone; with automaticallySync the phone gets a new contact without asking"

# MARK: a zone deleted on another device
phone delete-zone || fail "phone delete-zone failed"
mac sync || fail "mac sync after the zone deletion failed"
[ -z "$(mac list)" ] || fail "the Mac kept $(mac list | wc -l) contacts of a zone the phone deleted"
mac add v5 yan || fail "mac add after the zone deletion failed"
phone sync || fail "phone sync failed"
[ "$(phone list)" = "yan v5" ] || fail "after the zone came back the phone has: $(phone list | tr '\n' ' ')"
ok "a zone deleted on the phone empties the Mac (fetchedDatabaseChanges); the next save recreates it"

# MARK: every replica equals the server
mac sync && phone sync || fail "final sync failed"
[ "$(mac list)" = "$(phone list)" ] || fail "the replicas differ: $(diff <(mac list) <(phone list))"
count=$(curl -s -X POST "$NIMBUS_URL/database/1/$NIMBUS_CONTAINER/development/private/records/changes" \
  -H "Authorization: Bearer $MAC" -H 'Content-Type: application/json' -d '{"zoneID":{"zoneName":"Contacts"}}' | json_read record-summary | wc -l)
[ "$count" = "$(mac list | wc -l)" ] || fail "the server lists $count records, the replicas $(mac list | wc -l)"
ok "both replicas equal the server ($count contacts)"
