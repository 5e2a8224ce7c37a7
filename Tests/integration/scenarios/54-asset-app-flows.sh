#!/usr/bin/env bash
# Assets (issue 5): the server's own pruning job (`serve --prune-interval 1s --asset-grace 2s`)
# collects an orphan upload after its grace period and keeps an asset a record references, on
# AppLocker's production schema. The apps' flows themselves (the intruder photo by query and by
# changes, the locked-app list replaced, Maccy's clipboard released by the cascade, `prune`'s grace
# period and dry run): Tests/NimbusAPITests/AssetAppFlowTests.swift.
source "$(dirname "$0")/../lib.sh"

start_store_server --prune-interval 1s --asset-grace 2s
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac-mini
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
API_ENV=production
API_CONTAINER=iCloud.com.mirxa.AppLocker

# asset_rows: "base64-sha256/size" of every assets row, sorted.
asset_rows() { psql_db "SELECT encode(sha256, 'base64') || '/' || size FROM assets ORDER BY 1"; }

note "a referenced list and an orphan upload"
printf '["com.apple.Safari","com.apple.Terminal"]' >"$TEST_TMP/apps.json"
upload_asset "$MAC" "$TEST_TMP/apps.json" length LockedAppList apps
list=$UP_CHECKSUM/$UP_SIZE
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"forceReplace\",\"record\":{\"recordName\":\"locked-mac-mini\",\"recordType\":\"LockedAppList\",\"fields\":{\"deviceName\":{\"value\":\"mac-mini\"},\"apps\":$UP_FIELD}}}]}"
expect_item_codes ok "LockedAppList"
random_file "$TEST_TMP/orphan" 3000
upload_asset "$MAC" "$TEST_TMP/orphan" length LockedAppList apps
orphan=$UP_CHECKSUM/$UP_SIZE

note "the server's own pruning job (--prune-interval 1s --asset-grace 2s) collects the orphan upload"
deadline=$(( $(now_ms) + 15000 ))
while asset_rows | grep -q -x -F "$orphan"; do
  [ "$(now_ms)" -gt "$deadline" ] && fail "the pruning job did not collect the orphan upload within 15 s"
  sleep 0.2
done
asset_rows | grep -q -x -F "$list" || fail "the pruning job collected the referenced list"
ok "the pruning job collected the orphan upload after its grace period and kept the referenced list"

healthy "after the pruning job"
grep -a -q 'pruned' "$NIMBUS_LOG" || fail "the pruning job logged no 'pruned' line"
! grep -a -i -q 'internal error\|pruning failed' "$NIMBUS_LOG" || fail "server log: $(grep -a -i 'internal error\|pruning failed' "$NIMBUS_LOG" | head -n 2)"
expect_no_server_errors
finish_scenario
