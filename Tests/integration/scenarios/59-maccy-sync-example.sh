#!/usr/bin/env bash
# Maccy's clipboard history on NimbusKit (issue 32; Examples/MaccySync: its HistoryItem /
# HistoryItemContent models, the history's add, delete, pin and clear paths feeding the engine,
# title / value / images end-to-end encrypted as deploy/schemas/maccy.json declares) as device
# processes against the real server: a MacBook and an iMac (writable) and an iPhone (read-only):
# - the iPhone, the iMac and a fresh device enroll by pairing, the URL handing over the account key;
# - the MacBook copies 200 images of 1 MiB; the iPhone's first sync brings them all, byte-equal,
#   and the server holds neither the titles nor the images' bytes in clear;
# - live additions: the iPhone in live mode sees a copy made on the Mac; its search finds it;
# - clear history: unpinned items go everywhere, pinned ones stay;
# - pin conflicts from both Macs: one item pinned with two keys (the first pin on the server wins),
#   one key given to two items (one keeps it, the other gets a free key), and a pin made on one Mac
#   while the other clears (the pinned item and its image survive everywhere); a copy counted on one
#   Mac while the other clears (the clear wins);
# - every replica equals the server (a fresh device's copy).
source "$(dirname "$0")/../lib.sh"

APP=${MACCY_SYNC_BIN:-$NIMBUS_CLIENT_BIN_DIR/MaccySync}
[ -x "$APP" ] || fail "no MaccySync binary at $APP (swift build builds it)"
IMAGES=${MACCY_IMAGES:-200}

API_CONTAINER=iCloud.org.p0deje.Maccy
start_store_server
nimbus_admin schema import "$REPO_DIR/deploy/schemas/maccy.json" >/dev/null
nimbus_admin user add maria >/dev/null
issue_token MACBOOK maria macbook
export NIMBUS_URL

device() { local dir=$1; shift; MACCY_DIR="$TEST_TMP/$dir" timeout 120 "$APP" "$@"; }
mac() { NIMBUS_TOKEN=$MACBOOK device macbook mac "$@"; }
imac() { device imac mac "$@"; }
iphone() { device iphone iphone "$@"; }
# A fresh copy of the server: the fresh device's store and engine state dropped, then one sync.
fresh() {
  (cd "$TEST_TMP/fresh" && rm -rf history.json engine.journal* system-fields.json values cache)
  device fresh iphone sync && device fresh iphone "$@"
}
elapsed() { echo "$(( $(now_ms) - $1 )) ms"; }
# same_images DEVICE DIR...: the device's exported images are byte-equal to the files of the DIRs.
same_images() {
  local device=$1 out="$TEST_TMP/export-$1-$RANDOM"; shift
  mkdir -p "$out" && $device export "$out" || fail "$device export failed"
  (cd "$out" && sha256sum * | sort) >"$out.sums"
  for dir in "$@"; do (cd "$dir" && sha256sum *); done | sort >"$out.expected"
  cmp -s "$out.sums" "$out.expected" || fail "$device's images differ from the originals: $(diff "$out.expected" "$out.sums" | head -5)"
}

note "the MacBook makes the account key; the iPhone, the iMac and a fresh device pair with it"
for d in iphone imac fresh; do
  url=$(mac pair "$d") || fail "mac pair failed: $url"
  contains "$url" -q '#k=1\.' || fail "the pairing URL carries no key: $url"
  device "$d" "$([ $d = imac ] && echo mac || echo iphone)" enroll "$url" "$d" || fail "$d could not enroll"
done
cmp -s "$TEST_TMP/macbook/account.key" "$TEST_TMP/iphone/account.key" || fail "the iPhone did not get the MacBook's key"
ok "three devices enrolled by pairing URLs carrying the account key"

note "the MacBook copies $IMAGES images of 1 MiB"
mkdir -p "$TEST_TMP/images" "$TEST_TMP/later"
for i in $(seq 1 "$IMAGES"); do head -c 1048576 /dev/urandom >"$TEST_TMP/images/shot-$(printf %03d "$i").png"; done
t=$(now_ms)
mac add-images "$TEST_TMP/images" com.apple.Preview || fail "mac add-images failed"
mac sync || fail "the MacBook's first send failed"
[ "$(mac list | wc -l)" -eq "$IMAGES" ] || fail "the MacBook has $(mac list | wc -l) items"
ok "the MacBook saved and sent $IMAGES images of 1 MiB in $(elapsed "$t")"

t=$(now_ms)
iphone sync || fail "the iPhone's first sync failed"
[ "$(iphone list | wc -l)" -eq "$IMAGES" ] || fail "the iPhone has $(iphone list | wc -l) items"
ok "first sync on the iPhone: $IMAGES items in $(elapsed "$t")"
same_images iphone "$TEST_TMP/images"
ok "the iPhone's $IMAGES images are byte-equal to the Mac's"
first=$(sha256sum "$TEST_TMP/images/shot-001.png" | cut -d' ' -f1)
[ -n "$first" ] && [ "$(psql_db "select count(*) from assets")" -ge "$IMAGES" ] || fail "no assets on the server"
[ "$(psql_db "select count(*) from assets where sha256 = decode('$first', 'hex')")" = 0 ] || fail "the server holds an image in clear"
[ "$(psql_db "select count(*) from records where fields::text like '%shot-001%'")" = 0 ] || fail "the server holds a title in clear"
ok "the server holds neither an image nor a title in clear"

note "live additions"
iphone watch 40 "meeting notes 14:00" >"$TEST_TMP/watch.out" &
watcher=$!
sleep 1
t=$(now_ms)
mac add "meeting notes 14:00" com.apple.Notes && mac sync || fail "mac add failed"
wait "$watcher" || fail "the iPhone did not see the copy live: $(cat "$TEST_TMP/watch.out")"
ok "a copy on the Mac reached the iPhone in live mode in $(elapsed "$t")"
[ "$(iphone search MEETING)" = "meeting notes 14:00 -" ] || fail "the iPhone's search found: $(iphone search MEETING)"
iphone pin "meeting notes 14:00" b 2>/dev/null && fail "the iPhone's read-only copy accepted a pin"
ok "the iPhone's search finds it in its local copy; its copy is read-only"

note "clear history"
mac pin shot-001.png b && mac pin "meeting notes 14:00" c && mac sync || fail "mac pin failed"
t=$(now_ms)
mac clear && mac sync || fail "mac clear failed"
iphone sync || fail "iphone sync failed"
expected=$'meeting notes 14:00 c\nshot-001.png b'
[ "$(mac list)" = "$expected" ] || fail "after the clear the MacBook has: $(mac list)"
[ "$(iphone list)" = "$expected" ] || fail "after the clear the iPhone has: $(iphone list)"
ok "clear history: the unpinned $((IMAGES - 1)) images left both devices, the pinned items stayed ($(elapsed "$t"))"

note "pin conflicts from both Macs"
imac sync || fail "the iMac's first sync failed"
[ "$(imac list)" = "$expected" ] || fail "the iMac has: $(imac list)"
mac add shared && mac add alpha && mac add beta && mac add gamma || fail "mac add failed"
head -c 1048576 /dev/urandom >"$TEST_TMP/later/diagram.png"
mac add-images "$TEST_TMP/later" && mac sync && imac sync || fail "sync failed"
# Both Macs pin one item, each sending at once (as live mode does after a save): the iMac's save
# meets the MacBook's on the server, a conflict its engine hands to Maccy's merge.
mac pin shared d && imac pin shared e && mac send && imac send || fail "pin shared failed"
[ "$(imac list | grep '^shared ')" = "shared d" ] || fail "after the conflict the iMac has: $(imac list | grep '^shared ')"
# Offline edits on both Macs, then both sync.
mac pin alpha f && imac pin beta f || fail "pin f failed"
imac pin diagram.png g && mac clear || fail "pin/clear failed"
mac sync && imac sync && mac sync && imac sync && iphone sync || fail "sync after the conflicts failed"
server=$(fresh list) || fail "the fresh device failed"
for d in mac imac iphone; do [ "$($d list)" = "$server" ] || fail "$d has '$($d list)', the server '$server'"; done
contains "$server" -q -x "shared d" || fail "the item pinned d then e is not 'shared d' (the first pin to reach the server wins): $server"
# The item with the smaller record name keeps f; the other gets a free key.
keeper=$(fresh dump | awk -F'|' '$2 == "alpha" || $2 == "beta" { print $1, $2 }' | sort | head -1 | cut -d' ' -f2)
other=$([ "$keeper" = alpha ] && echo beta || echo alpha)
kept=$(sed -n "s/^$keeper //p" <<<"$server") moved=$(sed -n "s/^$other //p" <<<"$server")
{ [ "$kept" = f ] && [ "$moved" != f ] && [ "$moved" != - ] && [ -n "$moved" ]; } \
  || fail "the key f given to alpha and beta: $keeper has '$kept', $other '$moved' ($keeper keeps f, $other gets a free key)"
[ "$(cut -d' ' -f2 <<<"$server" | grep -v '^-$' | sort | uniq -d)" = "" ] || fail "two items share a pin: $server"
contains "$server" -q -x "diagram.png g" || fail "the image pinned on the iMac while the MacBook cleared is gone: $server"
contains "$server" -q "^gamma " && fail "gamma (unpinned) survived the clear: $server"
ok "one item pinned with two keys: the first pin stands on every device"
ok "one key pinned to two items: $keeper keeps f, $other got $moved, on every device"
ok "a pin on the iMac beats the MacBook's concurrent clear: the item stays everywhere"

# The iMac copies delta again (an update, sent at once) after the MacBook's clear deleted it: the
# engine re-creates the item without its contents; the clear wins and the empty item goes.
mac add delta && mac sync && imac sync || fail "delta failed"
mac clear && mac sync && imac add delta && imac send && imac sync && mac sync && iphone sync || fail "delta after the clear failed"
server=$(fresh list) || fail "the fresh device failed"
contains "$server" -q "^delta " && fail "delta, copied on the iMac while the MacBook cleared, came back: $server"
for d in mac imac iphone; do [ "$($d list)" = "$server" ] || fail "$d has '$($d list)', the server '$server'"; done
ok "a copy counted on the iMac while the MacBook cleared: the clear wins everywhere"

note "every replica equals the server"
server=$(fresh dump) || fail "the fresh device's dump failed"
[ "$(wc -l <<<"$server")" -eq 6 ] || fail "the server has $(wc -l <<<"$server") items, not 6: $server"
for d in mac imac iphone; do
  [ "$($d dump)" = "$server" ] || fail "$d differs from the server: $(diff <(echo "$server") <($d dump) | head -6)"
done
cp "$TEST_TMP/images/shot-001.png" "$TEST_TMP/later/"
for d in mac imac iphone fresh; do same_images "$d" "$TEST_TMP/later"; done
ok "MacBook, iMac and iPhone equal the server (items, pins, counts, contents); the images are byte-equal everywhere"
