#!/usr/bin/env bash
# NimbusKit (issue 12): AppLocker's own CloudKitManager (Examples/AppLockerSync, the app's code with
# only its import changed and its prune removed) driven as the Mac and the phone against the real
# server through NimbusKitCK:
# - publishBlockedApp, then the phone's fetchBlockedEvents lists it first;
# - publishFailedAuth with a photo file gives the phone a CKAsset whose file has the same bytes;
# - syncLockedAppList twice keeps one LockedAppList record per device (locked-<host name>);
# - setupPushSubscriptions, then a Mac event reaches the phone's notification channel with its title.
source "$(dirname "$0")/../lib.sh"

APP=${APPLOCKER_SYNC_BIN:-$NIMBUS_CLIENT_BIN_DIR/AppLockerSync}
[ -x "$APP" ] || fail "no AppLockerSync binary at $APP (swift build builds it)"

start_store_server
nimbus_admin user add anna >/dev/null
issue_token MAC anna mac
issue_token PHONE anna iphone
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" --environment development >/dev/null

mac() { NIMBUS_URL=$NIMBUS_URL NIMBUS_TOKEN=$MAC timeout 60 "$APP" mac "$@"; }
phone() { NIMBUS_URL=$NIMBUS_URL NIMBUS_TOKEN=$PHONE timeout 60 "$APP" phone "$@"; }

# MARK: blocked events, newest first
mac publish-blocked Safari com.apple.Safari || fail "publish-blocked Safari failed"
sleep 0.01
mac publish-blocked Mail com.apple.mail || fail "publish-blocked Mail failed"
listed=$(phone fetch-blocked) || fail "fetch-blocked failed: $listed"
[ "$(printf '%s\n' "$listed" | grep -c .)" = 2 ] || fail "the phone lists $(printf '%s\n' "$listed" | grep -c .) events, not 2: $listed"
[ "$(printf '%s\n' "$listed" | head -1 | cut -d' ' -f1,2)" = "Mail com.apple.mail" ] || fail "the newest event is not first: $listed"
ok "publishBlockedApp: the phone's fetchBlockedEvents lists the newest event first"

# MARK: failed auth with a photo
photo="$TEST_TMP/photo.bin"
head -c 300000 /dev/urandom >"$photo"
mac publish-failed Notes com.apple.Notes "$photo" || fail "publish-failed failed"
mkdir -p "$TEST_TMP/photos"
fetched=$(phone fetch-failed "$TEST_TMP/photos") || fail "fetch-failed failed: $fetched"
file=$(printf '%s\n' "$fetched" | head -1 | cut -d' ' -f2)
[ -f "$file" ] || fail "the phone got no photo file: $fetched"
cmp -s "$photo" "$file" || fail "the phone's photo differs from the Mac's"
ok "publishFailedAuth: the phone's CKAsset file has the photo's bytes"

# MARK: one LockedAppList per device
printf '[{"bundleID":"com.apple.Safari","displayName":"Safari","path":"/Applications/Safari.app"}]' >"$TEST_TMP/apps1.json"
printf '[{"bundleID":"com.apple.Safari","displayName":"Safari","path":"/Applications/Safari.app"},{"bundleID":"com.apple.mail","displayName":"Mail","path":"/Applications/Mail.app"}]' >"$TEST_TMP/apps2.json"
mac sync-locked-apps "$TEST_TMP/apps1.json" || fail "the first sync-locked-apps failed"
mac sync-locked-apps "$TEST_TMP/apps2.json" || fail "the second sync-locked-apps failed"
lists=$(phone fetch-locked-lists) || fail "fetch-locked-lists failed: $lists"
[ "$(printf '%s\n' "$lists" | grep -c .)" = 1 ] || fail "not one LockedAppList record: $lists"
[[ $lists == "locked-"*" apps=com.apple.Safari,com.apple.mail" ]] || fail "the list is not the second one: $lists"
ok "syncLockedAppList twice keeps one record per device, with the latest list"

# MARK: subscriptions through the notification channel
phone setup-subscriptions || fail "setup-subscriptions failed"
phone watch 20 >"$TEST_TMP/watch.out" 2>&1 &
watcher=$!
track_pid "$watcher"
for _ in $(seq 1 100); do grep -q '^watching' "$TEST_TMP/watch.out" && break; sleep 0.1; done
mac publish-blocked Xcode com.apple.dt.Xcode || fail "publish-blocked Xcode failed"
for _ in $(seq 1 100); do grep -q '^notification sub-blocked App Blocked' "$TEST_TMP/watch.out" && break; sleep 0.1; done
grep -q '^notification sub-blocked App Blocked' "$TEST_TMP/watch.out" || fail "the phone got no notification: $(cat "$TEST_TMP/watch.out")"
kill "$watcher" 2>/dev/null
ok "setupPushSubscriptions: a Mac event reaches the phone's notification channel with its title"

finish_scenario
