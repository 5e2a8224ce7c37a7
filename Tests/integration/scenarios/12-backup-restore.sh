#!/usr/bin/env bash
# Backup and restore (issue 16): `nimbus backup` while two writers run, restored into a fresh data
# directory and served: every write acknowledged before the backup started is there (assets
# byte for byte); a change token issued before the backup still gives a correct answer or
# CHANGE_TOKEN_EXPIRED, and one issued after it (by the old server) is CHANGE_TOKEN_EXPIRED, also
# after new writes. Bad input: a truncated archive, a file that is not an archive, another
# database's dump, an archive of a newer schema, a non-empty target; all exit non-zero, say why
# and restore nothing (a data directory that had no cluster is not even created). `--keep` keeps the newest archives.
source "$(dirname "$0")/../lib.sh"

old=$TEST_TMP/old-data new=$TEST_TMP/new-data
admin_old() { "$NIMBUS_BIN" "$@" --data-dir "$old"; }
changes_url() { printf '%s/database/1/%s/%s/private/records/changes' "$1" "$API_CONTAINER" "$API_ENV"; }
py_field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1" || fail "no $2 in $(head -c 300 "$1")"; }

start_nimbus --data-dir "$old"
old_pid=$NIMBUS_PID old_url=$NIMBUS_URL
admin_old user add alice >/dev/null || fail "user add on the running server's data dir failed"
output=$(admin_old token issue alice --device mac) || fail "token issue failed: $output"
MAC=$(printf '%s\n' "$output" | sed -n 's/^token: //p')
output=$(admin_old token issue alice --device phone) || fail "token issue failed: $output"
PHONE=$(printf '%s\n' "$output" | sed -n 's/^token: //p')
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Photos"}}}]}'

note "an asset saved before the backup"
random_file "$TEST_TMP/photo" 700000
upload_asset "$MAC" "$TEST_TMP/photo" length Photo image
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Photos\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"photo-1\",\"recordType\":\"Photo\",\"fields\":{\"image\":$UP_FIELD}}}]}"

# writer ZONE PREFIX: creates PREFIX-1, PREFIX-2, … until stopped; logs "ACK_MS NAME" per 200.
writer() {
  local zone=$1 prefix=$2 i=0 answer
  while [ ! -f "$TEST_TMP/stop-writers" ]; do
    i=$((i + 1))
    answer=$(api_call "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"$zone\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"$prefix-$i\",\"recordType\":\"Event\",\"fields\":{\"n\":{\"value\":$i,\"type\":\"INT64\"}}}}]}")
    [ "${answer##* }" = 200 ] && echo "$(now_ms) $prefix-$i" >>"$TEST_TMP/acks-$zone"
  done
}
writer _defaultZone d & track_pid $!; writer_a=$!
writer Photos p & track_pid $!; writer_b=$!
sleep 2

note "a token of each zone from before the backup"
python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$old_url")" "$PHONE" _defaultZone - "$TEST_TMP/before-default.json"
python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$old_url")" "$PHONE" Photos - "$TEST_TMP/before-photos.json"
sleep 1

note "nimbus backup while the writers run"
backup_started=$(now_ms)
admin_old backup --output "$TEST_TMP/nimbus.dump" >"$TEST_TMP/backup.out" 2>&1 || fail "backup exited non-zero: $(cat "$TEST_TMP/backup.out")"
grep -q 'schema version' "$TEST_TMP/backup.out" || fail "backup did not say the schema version: $(cat "$TEST_TMP/backup.out")"
[ -s "$TEST_TMP/nimbus.dump" ] && [ ! -e "$TEST_TMP/nimbus.dump.partial" ] || fail "no complete archive at $TEST_TMP/nimbus.dump"
ok "backup while writing: $(cat "$TEST_TMP/backup.out")"
sleep 1
note "a token from after the backup, issued by the old server"
python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$old_url")" "$PHONE" _defaultZone - "$TEST_TMP/after-default.json"
touch "$TEST_TMP/stop-writers"
wait "$writer_a" "$writer_b"
stop_nimbus "$old_pid" || fail "the old server did not stop cleanly"
acked_before=$(cat "$TEST_TMP"/acks-* | awk -v t="$backup_started" '$1 < t' | wc -l)
acked_after=$(cat "$TEST_TMP"/acks-* | awk -v t="$backup_started" '$1 >= t' | wc -l)
[ "$acked_before" -gt 20 ] && [ "$acked_after" -gt 0 ] || fail "too few writes around the backup ($acked_before before, $acked_after after)"

note "restore into a fresh data directory and serve it"
"$NIMBUS_BIN" restore "$TEST_TMP/nimbus.dump" --data-dir "$new" >"$TEST_TMP/restore.out" 2>&1 \
  || fail "restore exited non-zero: $(cat "$TEST_TMP/restore.out")"
start_nimbus --data-dir "$new"
new_url=$NIMBUS_URL
python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$new_url")" "$PHONE" _defaultZone - "$TEST_TMP/restored-default.json"
python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$new_url")" "$PHONE" Photos - "$TEST_TMP/restored-photos.json"
missing=0
while read -r at name; do
  [ "$at" -lt "$backup_started" ] || continue
  zone=default
  [[ $name == p-* ]] && zone=photos
  grep -q "\"$name\"" "$TEST_TMP/restored-$zone.json" || { missing=$((missing + 1)); echo "missing $name (acknowledged at $at)" >&2; }
done < <(cat "$TEST_TMP"/acks-*)
[ "$missing" = 0 ] || fail "$missing writes acknowledged before the backup started are not in the restored server"
ok "all $acked_before writes acknowledged before the backup started are restored (the device token still works)"

note "the asset, byte for byte"
url=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['records']['photo-1']['fields']['image']['value']['downloadURL'])" "$TEST_TMP/restored-photos.json")
asset_get "$MAC" "$url" "$TEST_TMP/photo.back"
expect_status 200 "download of the restored asset"
expect_same_file "$TEST_TMP/photo" "$TEST_TMP/photo.back" "restored asset"
ok "the restored asset downloads byte for byte"

note "a token from before the backup: a correct answer or CHANGE_TOKEN_EXPIRED"
for zone in default photos; do
  zone_name=_defaultZone
  [ "$zone" = photos ] && zone_name=Photos
  token=$(py_field "$TEST_TMP/before-$zone.json" "['token']")
  python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$new_url")" "$PHONE" "$zone_name" "$token" "$TEST_TMP/since-$zone.json"
  status=$(py_field "$TEST_TMP/since-$zone.json" "['status']")
  if [ "$status" = 200 ]; then
    python3 - "$TEST_TMP/before-$zone.json" "$TEST_TMP/since-$zone.json" "$TEST_TMP/restored-$zone.json" <<'PY' || fail "the token from before the backup gave a wrong answer in $zone_name"
import json, sys
before, since, full = (json.load(open(p)) for p in sys.argv[1:4])
held = set(before["records"]) | set(since["records"])
held -= set(since["deleted"])
if held != set(full["records"]):
    sys.exit("held %d, server has %d; missing %s, extra %s" % (len(held), len(full["records"]),
             sorted(set(full["records"]) - held)[:5], sorted(held - set(full["records"]))[:5]))
PY
    ok "$zone_name: the token from before the backup syncs to exactly the restored records"
  else
    [ "$(py_field "$TEST_TMP/since-$zone.json" "['serverErrorCode']")" = CHANGE_TOKEN_EXPIRED ] \
      || fail "$zone_name: the token from before the backup got $status $(cat "$TEST_TMP/since-$zone.json")"
    ok "$zone_name: the token from before the backup is CHANGE_TOKEN_EXPIRED"
  fi
done

note "a token from after the backup: CHANGE_TOKEN_EXPIRED, also once new writes pass its position"
after_token=$(py_field "$TEST_TMP/after-default.json" "['token']")
for round in before-writes after-writes; do
  python3 "$REPO_DIR/Tests/integration/changes.py" "$(changes_url "$new_url")" "$PHONE" _defaultZone "$after_token" "$TEST_TMP/lost.json"
  [ "$(py_field "$TEST_TMP/lost.json" "['status']")" = 410 ] && [ "$(py_field "$TEST_TMP/lost.json" "['serverErrorCode']")" = CHANGE_TOKEN_EXPIRED ] \
    || fail "the token from after the backup ($round) got $(cat "$TEST_TMP/lost.json")"
  grep -q 'without a token' "$TEST_TMP/lost.json" || fail "the expiry does not say to fetch again without a token: $(cat "$TEST_TMP/lost.json")"
  ops=""
  for i in $(seq 1 $((acked_after + 5))); do ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"new-$round-$i\",\"recordType\":\"Event\",\"fields\":{}}}"; done
  api_ok "$MAC" records/modify "{\"operations\":[$ops]}"
done
ok "the token from after the backup is CHANGE_TOKEN_EXPIRED before and after new writes"
stop_nimbus || fail "the restored server did not stop cleanly"

note "bad input: nothing is restored"
expect_refused() {
  local what=$1 pattern=$2; shift 2
  "$NIMBUS_BIN" "$@" >"$TEST_TMP/refused.out" 2>&1 && fail "$what: exited 0: $(cat "$TEST_TMP/refused.out")"
  grep -qi -- "$pattern" "$TEST_TMP/refused.out" || fail "$what: the message does not say '$pattern': $(cat "$TEST_TMP/refused.out")"
  ok "$what: exit non-zero, $(tail -n 1 "$TEST_TMP/refused.out")"
}
expect_refused "a non-empty target" "pass --force" restore "$TEST_TMP/nimbus.dump" --data-dir "$new"
head -c $(( $(file_size "$TEST_TMP/nimbus.dump") / 2 )) "$TEST_TMP/nimbus.dump" >"$TEST_TMP/truncated.dump"
expect_refused "a truncated archive" "not a complete backup" restore "$TEST_TMP/truncated.dump" --data-dir "$TEST_TMP/c"
printf 'not an archive\n' >"$TEST_TMP/foreign.dump"
expect_refused "a file that is not an archive" "not a complete backup" restore "$TEST_TMP/foreign.dump" --data-dir "$TEST_TMP/c"
expect_refused "a missing archive" "no such file" restore "$TEST_TMP/none.dump" --data-dir "$TEST_TMP/c"
other=$(fresh_database)
"$NIMBUS_TEST_PG_BIN/psql" "$other" -X -q -c "CREATE TABLE t (x int); INSERT INTO t VALUES (1)" || fail "cannot fill $other"
"$NIMBUS_TEST_PG_BIN/pg_dump" --format=custom --file="$TEST_TMP/other.dump" "$other" || fail "pg_dump of $other failed"
expect_refused "another database's dump" "not of a Nimbus database" restore "$TEST_TMP/other.dump" --data-dir "$TEST_TMP/c"
newer=$(fresh_database)
"$NIMBUS_BIN" migrate --database-url "$newer" >/dev/null 2>&1 || fail "migrate of $newer failed"
"$NIMBUS_TEST_PG_BIN/psql" "$newer" -X -q -c "INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, '9999_future', 'x')" \
  || fail "cannot mark $newer as newer"
"$NIMBUS_BIN" backup --database-url "$newer" --output "$TEST_TMP/newer.dump" >/dev/null 2>&1 || fail "backup of $newer failed"
expect_refused "an archive of a newer schema" "newer Nimbus" restore "$TEST_TMP/newer.dump" --data-dir "$TEST_TMP/c"
# A refused restore changes nothing: no empty cluster is left in a data directory that had none.
[ ! -e "$TEST_TMP/c" ] || fail "the refused restores left $TEST_TMP/c behind: $(ls -A "$TEST_TMP/c")"
users=$("$NIMBUS_BIN" user list --data-dir "$TEST_TMP/c" 2>&1)
[ -z "$users" ] || [[ $users == *"no Nimbus database"* ]] || fail "a refused restore left users behind: $users"
ok "after the refused restores the target holds no users"

note "--force replaces; --keep keeps the newest archives"
"$NIMBUS_BIN" restore "$TEST_TMP/nimbus.dump" --data-dir "$new" --force >/dev/null 2>&1 || fail "restore --force failed"
[ "$("$NIMBUS_BIN" user list --data-dir "$new" | cut -f1)" = alice ] || fail "after restore --force the users are not alice alone"
for i in 1 2 3; do
  "$NIMBUS_BIN" backup --data-dir "$new" --keep 2 >/dev/null 2>&1 || fail "backup --keep 2 failed"
done
[ "$(ls "$new/backups" | grep -c '^nimbus-.*\.dump$')" = 2 ] || fail "backup --keep 2 left: $(ls "$new/backups")"
ok "restore --force replaces the database; three backups with --keep 2 leave two in $new/backups"
finish_scenario
