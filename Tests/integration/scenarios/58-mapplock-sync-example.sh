#!/usr/bin/env bash
# MappLock's CloudSyncService (issue 32; Examples/MappLockSync: the plan's code with its import
# changed and its three stubs filled with NimbusKit's engine) on three devices, Mac, iPad and
# iPhone, against the real server:
# - a configuration made on the Mac reaches the iPad and the iPhone;
# - the iPhone's subscription wakes it when the iPad renames the configuration;
# - Mac and iPhone edit the same configuration at once: every device ends with the same copy (when the
#   edits overlap, the later modifiedAt wins whole);
# - every replica equals the server (a fresh device's copy).
source "$(dirname "$0")/../lib.sh"

APP=${MAPPLOCK_SYNC_BIN:-$NIMBUS_CLIENT_BIN_DIR/MappLockSync}
[ -x "$APP" ] || fail "no MappLockSync binary at $APP (swift build builds it)"

start_store_server
nimbus_admin user add mia >/dev/null
issue_token MAC mia mac
issue_token IPAD mia ipad
issue_token IPHONE mia iphone
issue_token FRESH mia fresh
export NIMBUS_URL

device() { local name=$1 token=$2; shift 2; MAPPLOCK_DIR="$TEST_TMP/$name" NIMBUS_TOKEN=$token timeout 60 "$APP" "$@"; }
mac() { device mac "$MAC" "$@"; }
ipad() { device ipad "$IPAD" "$@"; }
iphone() { device iphone "$IPHONE" "$@"; }
fresh() { device fresh "$FRESH" "$@"; }

id=$(mac create Focus 3600) || fail "mac create failed: $id"
ipad sync && iphone sync || fail "sync failed"
[ "$(ipad list)" = "$id Focus 3600 " ] || fail "the iPad has: $(ipad list)"
[ "$(iphone list)" = "$id Focus 3600 " ] || fail "the iPhone has: $(iphone list)"
ok "a configuration made on the Mac reaches the iPad and the iPhone"

iphone watch 30 "$id" Study >"$TEST_TMP/watch.out" &
watcher=$!
for _ in $(seq 1 200); do grep -q subscribed "$TEST_TMP/watch.out" && break; sleep 0.05; done
grep -q subscribed "$TEST_TMP/watch.out" || fail "the iPhone did not subscribe"
sleep 1
ipad edit "$id" name Study || fail "ipad edit failed"
wait "$watcher" || fail "the iPhone was not woken: $(cat "$TEST_TMP/watch.out")"
grep -q '^woke' "$TEST_TMP/watch.out" || fail "the iPhone watch printed: $(cat "$TEST_TMP/watch.out")"
[ "$(iphone list)" = "$id Study 3600 " ] || fail "after the wake the iPhone has: $(iphone list)"
ok "the iPhone's subscription wakes it when the iPad renames the configuration"

mac edit "$id" duration 1800 & a=$!
iphone edit "$id" block-website example.com & b=$!
wait "$a" || fail "mac edit failed"
wait "$b" || fail "iphone edit failed"
for d in mac ipad iphone; do $d sync || fail "$d sync failed"; done
fresh sync || fail "fresh sync failed"
server=$(fresh list)
for d in mac ipad iphone; do [ "$($d list)" = "$server" ] || fail "$d has '$($d list)', the server '$server'"; done
# Overlapping edits: the later modifiedAt wins whole; one after the other: both apply.
case "$server" in
  "$id Study 1800 "|"$id Study 3600 example.com"|"$id Study 1800 example.com") ;;
  *) fail "the converged configuration is none of the edits: $server" ;;
esac
ok "concurrent edits on the Mac and the iPhone converge on the same configuration everywhere: $server"
ok "all three replicas equal the server"
