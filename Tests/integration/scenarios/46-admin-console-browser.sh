#!/usr/bin/env bash
# The admin console (docs/console.md) in a real browser: Debian's headless Chromium driven over
# its DevTools protocol (Tests/integration/cdp.py, --remote-debugging-pipe) against the real
# binary with a seeded user. Throughout, cdp.py fails the run on any uncaught exception, console
# error, CSP violation, failed load, 5xx or request to another origin.
# - every page renders; a screenshot of each is kept in Tests/integration/out/console/ (the
#   README's and docs/console.md's images are copies of them);
# - the devices page shows the lag of a device that is behind (3 records after its last fetch);
# - revoking that device with the page's button (its confirm() accepted) makes its token fail;
# - deleting a record from the record browser needs its name typed; it becomes a tombstone the
#   devices fetch, and the audit page shows who did it;
# - the retention page's dry run lists exactly what `nimbus prune --dry-run` lists;
# - a schema file imported through the page into development shows up as a difference to
#   production, and the page's deploy copies it.
source "$(dirname "$0")/../lib.sh"

command -v chromium >/dev/null || fail "chromium is not installed (Tests/run.sh installs it)"
DAY_MS=86400000
start_store_server --prune-interval 1h
ADMIN=$(admin_url)
nimbus_admin user add anna >/dev/null
issue_token MAC anna mac
issue_token PHONE anna iphone
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
API_CONTAINER=iCloud.com.mirxa.AppLocker
ADMIN_TOKEN=$(nimbus_admin admin token issue ops | sed -n 's/^token: //p')
[ -n "$ADMIN_TOKEN" ] || fail "admin token issue printed no token"

NOW=$(now_ms)
OLD=$((NOW - 31 * DAY_MS))
event() {  # event NAME TIMESTAMP: a BlockedAppEvent create
  printf '{"operationType":"create","record":{"recordName":"%s","recordType":"BlockedAppEvent","fields":{"appName":{"value":"Safari"},"bundleID":{"value":"com.apple.Safari"},"timestamp":{"value":%s,"type":"TIMESTAMP"}}}}' "$1" "$2"
}
note "seeding: 2 expired events and 1 fresh one; the phone fetches; then 3 more records (the phone's lag)"
api_ok "$MAC" records/modify "{\"operations\":[$(event old-1 $OLD),$(event old-2 $OLD),$(event fresh-1 $NOW)]}"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
api_ok "$MAC" records/modify "{\"operations\":[$(event new-1 $NOW),$(event new-2 $NOW),$(event new-3 $NOW)]}"

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
  "go:#/users/anna" "wait-text:3 records behind" shot:devices \
  "click:[data-revoke=\"$PHONE_ID\"]" wait-rendered "expect-absent:[data-revoke=\"$PHONE_ID\"]" \
  "go:#/records?user=anna&container=$API_CONTAINER&environment=development&zoneName=_defaultZone" "wait-text:new-3" shot:records \
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
  "go:#/configuration" "wait-text:0012_sync_positions_and_prune_runs" shot:configuration
grep -a -v -F "$ADMIN/" "$shots/requests.txt" | grep -a -v '^data:' | grep -a . && fail "the page asked another origin: $(cat "$shots/requests.txt")"
ok "every page renders in Chromium with no console error and no request to another origin; screenshots in $shots"
grep -a 'ready in' "$TEST_TMP/browser.out" | sed 's/^/# /'

api "$PHONE" users/current
expect_api_error 401 AUTHENTICATION_FAILED "the device revoked from the devices page"
ok "the devices page showed the phone 3 records behind, and its Revoke button made the phone's token fail"

api_ok "$MAC" records/lookup '{"zoneID":{"zoneName":"_defaultZone"},"records":[{"recordName":"new-2"},{"recordName":"new-3"}]}'
expect_item_codes "NOT_FOUND ok" "the record deleted from the browser"
json=$(curl -sS --max-time 10 -H "Authorization: Bearer $ADMIN_TOKEN" "$ADMIN/api/audit")
contains "$json" -q '"action":"record.delete"' && contains "$json" -q '"target":"new-2"' && contains "$json" -q '"adminName":"ops"' \
  || fail "the audit lacks the record delete: $json"
contains "$json" -q '"action":"schema.import"' && contains "$json" -q '"action":"schema.deploy"' || fail "the audit lacks the schema changes: $json"
ok "a record deleted from the browser (its name typed) is gone for devices and audited; the schema import and deploy are audited"

console_rows=$(sed -n 's/^eval = //p' "$TEST_TMP/browser.out" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read()))')
run_prune --dry-run --tombstones-older-than 90d
[ "$PRUNE_STATUS" = 0 ] || fail "nimbus prune --dry-run: $PRUNE_ERR"
cli_rows=$(printf '%s\n' "$PRUNE_OUT" | sed -n -E 's/^([^ ]+) ([^ ]+) user=([^ ]+) zone=([^ ]+) type=([^:]+): would delete records=([0-9]+) tombstones=([0-9]+)$/\1 \2 \3 \4 \5 \6 \7/p' | sort)
[ -n "$cli_rows" ] || fail "the CLI's dry run lists nothing: $PRUNE_OUT"
[ "$console_rows" = "$cli_rows" ] || fail "the retention page's dry run lists '$console_rows', the CLI's '$cli_rows'"
contains "$cli_rows" -q "BlockedAppEvent 2 0" || fail "the dry run should list the 2 expired events: $cli_rows"
ok "the retention page's dry run lists what the CLI's dry run lists: $(printf '%s' "$cli_rows" | tr '\n' ';')"

expect_no_server_errors
finish_scenario
