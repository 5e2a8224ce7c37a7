#!/usr/bin/env bash
# The admin console (docs/console.md) in a real browser: Debian's headless Chromium driven over
# its DevTools protocol (Tests/integration/cdp.py, --remote-debugging-pipe) against the real
# binary with a seeded user. Throughout, cdp.py fails the run on any uncaught exception, console
# error, CSP violation, failed load, 5xx or request to another origin.
# - every page renders; a screenshot of each is kept in Tests/integration/out/console/ (ignored by
#   git; the README's and docs/console.md's images are copies of them, made only by
#   Tests/integration/refresh-console-images.sh, never by a test run);
# - the devices page shows the lag of a device that is behind (4 records after its last fetch);
# - revoking that device with the page's button (its confirm() accepted) makes its token fail; a
#   token issued on the page works at once;
# - the record browser offers an asset's download, which is the uploaded bytes;
# - deleting a record from the record browser needs its name typed; it becomes a tombstone the
#   devices fetch, and the audit page shows who did it;
# - the retention page's dry run lists exactly what `nimbus prune --dry-run` lists;
# - a schema file imported through the page into development shows up as a difference to
#   production, and the page's deploy copies it;
# - the push page shows a watch's registration (its APNs token shortened to 8 digits) and the
#   queue depth: 6 alerts queued for it by the mac's events (push is on; with no sender, or a
#   sender whose APNs address answers nothing, they stay queued).
source "$(dirname "$0")/../lib.sh"

command -v chromium >/dev/null || fail "chromium is not installed (Tests/run.sh installs it)"
DAY_MS=86400000
# Push on. The APNs key and address go by environment only: a binary whose sender needs them reads
# them; one without a sender ignores them. Nothing listens at port 1, so nothing is ever sent.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TEST_TMP/apns.p8" 2>/dev/null || fail "openssl genpkey failed"
export NIMBUS_APNS_KEY_FILE="$TEST_TMP/apns.p8" NIMBUS_APNS_KEY_ID=KEY1234567 NIMBUS_APNS_TEAM_ID=TEAM123456 NIMBUS_APNS_URL=https://127.0.0.1:1
start_store_server --prune-interval 1h --push direct --apns-topics iCloud.com.mirxa.AppLocker=com.mirxa.AppLocker
ADMIN=$(admin_url)
nimbus_admin user add anna >/dev/null
issue_token MAC anna mac
issue_token PHONE anna iphone
issue_token WATCH anna watch
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
API_CONTAINER=iCloud.com.mirxa.AppLocker
ADMIN_TOKEN=$(nimbus_admin admin token issue ops | sed -n 's/^token: //p')
[ -n "$ADMIN_TOKEN" ] || fail "admin token issue printed no token"

NOW=$(now_ms)
OLD=$((NOW - 31 * DAY_MS))
event() {  # event NAME TIMESTAMP: a BlockedAppEvent create
  printf '{"operationType":"create","record":{"recordName":"%s","recordType":"BlockedAppEvent","fields":{"appName":{"value":"Safari"},"bundleID":{"value":"com.apple.Safari"},"timestamp":{"value":%s,"type":"TIMESTAMP"}}}}' "$1" "$2"
}
note "push: the watch registers; the mac subscribes to its events with an alert"
WATCH_APNS=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
api_ok "$WATCH" tokens/register "{\"apnsEnvironment\":\"development\",\"apnsToken\":\"$WATCH_APNS\"}"
contains "$HTTP_BODY" -q '"push":"direct"' || fail "tokens/register did not say push is direct: $HTTP_BODY"
api_ok "$MAC" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"sub-blocked","subscriptionType":"query","query":{"recordType":"BlockedAppEvent"},"firesOn":["create"],"notificationInfo":{"title":"Blocked"}}}]}'
note "seeding: 2 expired events and 1 fresh one; the phone fetches; then 4 more records (the phone's lag)"
api_ok "$MAC" records/modify "{\"operations\":[$(event old-1 $OLD),$(event old-2 $OLD),$(event fresh-1 $NOW)]}"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
api_ok "$MAC" records/modify "{\"operations\":[$(event new-1 $NOW),$(event new-2 $NOW),$(event new-3 $NOW)]}"
note "an asset: the mac's locked-app list (4,321 random bytes)"
api_ok "$MAC" assets/upload '{"tokens":[{"recordType":"LockedAppList","fieldName":"apps"}]}'
upload_url=$(json_field url) || fail "assets/upload gave no url: $HTTP_BODY"
random_file "$TEST_TMP/apps" 4321
upload=$(curl -sS --max-time 20 -H "Authorization: Bearer $MAC" --data-binary @"$TEST_TMP/apps" "$upload_url") || fail "upload failed"
CHECKSUM=$(json_field fileChecksum "$upload")
apps="{\"fileChecksum\":\"$CHECKSUM\",\"size\":4321,\"receipt\":\"$(json_field receipt "$upload")\"}"
api_ok "$MAC" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"locked-mac\",\"recordType\":\"LockedAppList\",\"fields\":{\"deviceName\":{\"value\":\"mac\"},\"apps\":{\"value\":$apps,\"type\":\"ASSETID\"}}}}]}"

shots="$REPO_DIR/Tests/integration/out/console"
mkdir -p "$shots"
# browse STEP...: one Chromium run of cdp.py steps; its output is kept in $TEST_TMP/browser.out.
browse() {
  timeout 150 python3 "$REPO_DIR/Tests/integration/cdp.py" --origin "$ADMIN" --out "$shots" --timeout 140 "$@" \
    >"$TEST_TMP/browser.out" 2>&1
  local status=$?
  sed 's/^/    /' "$TEST_TMP/browser.out"
  [ "$status" = 0 ] || fail "the console in Chromium failed (exit $status): $(grep -a -E 'FAIL|error' "$TEST_TMP/browser.out" | head -5)"
}

rows_script='[...document.querySelectorAll("#run table tbody tr")].map(tr => [...tr.cells].map(td => td.textContent).join(" ")).sort().join("\n")'
browse "visit:/#/overview?token=$ADMIN_TOKEN" "wait-text:Database round trip" shot:overview \
  "go:#/users" "wait-text:anna" shot:users \
  "go:#/users/anna" "wait-text:4 records behind" shot:devices \
  "click:[data-revoke=\"$PHONE_ID\"]" wait-rendered "expect-absent:[data-revoke=\"$PHONE_ID\"]" \
  "type:#issue-token input[name]=ipad" "click:#issue-token button" "wait-text:shown once" \
  "eval:document.getElementById('issued-token').textContent" \
  "go:#/records?user=anna&container=$API_CONTAINER&environment=development&zoneName=_defaultZone" "wait-text:new-3" shot:records \
  "eval:document.querySelector('[data-download]')?.dataset.download" \
  "eval:fetch(\"/api/assets?user=anna&container=$API_CONTAINER&environment=development&fileChecksum=\" + encodeURIComponent(document.querySelector('[data-download]').dataset.download) + \"&size=4321\", {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('nimbus.adminToken')}}).then(r => r.blob()).then(b => b.size)" \
  "click:[data-delete=\"new-2\"]" "type:#confirm-name=new-2" "click:#confirm-delete" wait-rendered "expect-absent:[data-delete=\"new-2\"]" \
  "go:#/retention" "wait-text:Expired or expiring within 24 h" "click:#dry-run" "wait-text:finished" shot:retention "eval:$rows_script" \
  "go:#/storage" "wait-text:Quota use" shot:storage \
  "go:#/schema" "wait-text:Import a schema file" \
  'type:#schema-file={"container":"iCloud.com.example.Console","recordTypes":{"Note":{"fields":{"title":"STRING"}}}}' \
  "click:#import" "wait-text:Imported 1 record types" \
  "go:#/schema?container=iCloud.com.example.Console" "wait-text:deploy creates it" shot:schema \
  "click:#deploy" wait-rendered "wait-text:Production equals development" \
  "go:#/requests" "wait-text:records/modify" shot:requests \
  "go:#/audit" "wait-text:record.delete" shot:audit \
  "go:#/configuration" "wait-text:0012_sync_positions_and_prune_runs" shot:configuration \
  "go:#/push" "wait-text:Registrations (1 of 1)" shot:push \
  "eval:document.querySelector('#push-queue-depth .value').textContent" \
  "eval:document.querySelector('[data-apns-token=\"$WATCH_ID\"]').textContent" \
  "eval:document.body.textContent.includes('$WATCH_APNS'.slice(0, 9))"
grep -a -v -F "$ADMIN/" "$shots/requests.txt" | grep -a -v '^data:' | grep -a . && fail "the page asked another origin: $(cat "$shots/requests.txt")"
ok "every page renders in Chromium with no console error and no request to another origin; screenshots in $shots"
grep -a 'ready in' "$TEST_TMP/browser.out" | sed 's/^/# /'

api "$PHONE" users/current
expect_api_error 401 AUTHENTICATION_FAILED "the device revoked from the devices page"
ok "the devices page showed the phone 4 records behind, and its Revoke button made the phone's token fail"

api_ok "$MAC" records/lookup '{"zoneID":{"zoneName":"_defaultZone"},"records":[{"recordName":"new-2"},{"recordName":"new-3"}]}'
expect_item_codes "NOT_FOUND ok" "the record deleted from the browser"
json=$(curl -sS --max-time 10 -H "Authorization: Bearer $ADMIN_TOKEN" "$ADMIN/api/audit")
contains "$json" -q '"action":"record.delete"' && contains "$json" -q '"target":"new-2"' && contains "$json" -q '"adminName":"ops"' \
  || fail "the audit lacks the record delete: $json"
contains "$json" -q '"action":"schema.import"' && contains "$json" -q '"action":"schema.deploy"' || fail "the audit lacks the schema changes: $json"
contains "$json" -q '"deviceName":"ipad"' || fail "the audit lacks the token issued on the devices page for ipad: $json"
ok "a record deleted from the browser (its name typed) is gone for devices and audited; the schema import and deploy are audited"

evaluated() { sed -n 's/^eval = //p' "$TEST_TMP/browser.out" | sed -n "$1p" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read()))'; }
issued=$(evaluated 1)
api "$issued" users/current
expect_status 200 "the token issued on the devices page"
ok "a device token issued on the devices page works at once"
[ "$(evaluated 2)" = "$CHECKSUM" ] || fail "the records page offers no download of the asset $CHECKSUM: $(evaluated 2)"
[ "$(evaluated 3)" = 4321 ] || fail "the page's asset download got $(evaluated 3) bytes, not 4321"
HTTP_STATUS=$(curl -sS --max-time 20 -o "$TEST_TMP/downloaded" -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" -G \
  --data-urlencode user=anna --data-urlencode container=$API_CONTAINER --data-urlencode environment=development \
  --data-urlencode "fileChecksum=$CHECKSUM" --data-urlencode size=4321 "$ADMIN/api/assets")
[ "$HTTP_STATUS" = 200 ] && cmp -s "$TEST_TMP/downloaded" "$TEST_TMP/apps" || fail "the admin asset download ($HTTP_STATUS) differs from the upload"
ok "the records page offers the asset's download, and it is the uploaded bytes"
console_rows=$(evaluated 4)
run_prune --dry-run --tombstones-older-than 90d
[ "$PRUNE_STATUS" = 0 ] || fail "nimbus prune --dry-run: $PRUNE_ERR"
cli_rows=$(printf '%s\n' "$PRUNE_OUT" | sed -n -E 's/^([^ ]+) ([^ ]+) user=([^ ]+) zone=([^ ]+) type=([^:]+): would delete records=([0-9]+) tombstones=([0-9]+)$/\1 \2 \3 \4 \5 \6 \7/p' | sort)
[ -n "$cli_rows" ] || fail "the CLI's dry run lists nothing: $PRUNE_OUT"
[ "$console_rows" = "$cli_rows" ] || fail "the retention page's dry run lists '$console_rows', the CLI's '$cli_rows'"
contains "$cli_rows" -q "BlockedAppEvent 2 0" || fail "the dry run should list the 2 expired events: $cli_rows"
ok "the retention page's dry run lists what the CLI's dry run lists: $(printf '%s' "$cli_rows" | tr '\n' ';')"

[ "$(evaluated 5)" = 6 ] || fail "the push page shows a queue depth of '$(evaluated 5)', not the 6 alerts queued for the watch"
[ "$(evaluated 6)" = "01234567…" ] || fail "the push page shows the watch's APNs token as '$(evaluated 6)', not its first 8 digits and …"
[ "$(evaluated 7)" = False ] || fail "the push page shows more of the watch's APNs token than its first 8 digits"
ok "the push page shows the watch's registration with its APNs token shortened, and the 6 pushes queued for it"

expect_no_server_errors
finish_scenario
