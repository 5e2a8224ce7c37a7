#!/usr/bin/env bash
# Schema, the commands (issue 3): `nimbus schema show` prints what development learned from a save,
# `nimbus schema deploy` opens production to it, `nimbus schema import` loads a file into both
# environments (or one with --environment), show's output re-imports unchanged, and a conflicting
# import exits non-zero naming the field. (The rules — just-in-time types, refused saves teaching
# nothing, racing definitions, production's deployed-only schema, appendOnly types — are in-process:
# Tests/NimbusAPITests/SchemaTests.swift.)
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token TOK alice mac
API_CONTAINER=com.example.SchemaTest
C=$API_CONTAINER

save() { # KIND NAME TYPE FIELDS
  api_ok "$TOK" records/modify "{\"operations\":[{\"operationType\":\"$1\",\"record\":{\"recordName\":\"$2\",\"recordType\":\"$3\",\"fields\":$4}}]}"
}

note "schema show lists what a development save defined; schema deploy opens production to it"
save create w1 Widget '{"name":{"value":"first"},"count":{"value":3},"when":{"value":1795000000000,"type":"TIMESTAMP"}}'
expect_item_codes ok "first Widget"
shown=$(nimbus_admin schema show "$C") || exit 1
for pair in name:STRING count:INT64 when:TIMESTAMP; do
  contains "$shown" -q "\"${pair%%:*}\":\"${pair#*:}\"" || fail "schema show lacks ${pair%%:*} ${pair#*:}: $shown"
done
API_ENV=production
save create p1 Widget '{"name":{"value":"prod"}}'
expect_item_codes BAD_REQUEST "an undeployed type in production"
deployed=$(nimbus_admin schema deploy "$C") || exit 1
[[ $deployed == "deployed 1 record types of $C to production" ]] || fail "schema deploy printed: $deployed"
save create p1 Widget '{"name":{"value":"prod"}}'
expect_item_codes ok "a deployed type in production"
API_ENV=development
ok "schema show: name STRING, count INT64, when TIMESTAMP; production accepts Widget after schema deploy"

note "schema show prints the imported schema; it re-imports; a conflicting import is refused"
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
shown=$(nimbus_admin schema show iCloud.com.mirxa.AppLocker) || exit 1
for part in '"container":"iCloud.com.mirxa.AppLocker"' '"BlockedAppEvent":{"appendOnly":true,"fields":{"appName":"STRING","bundleID":"STRING","deviceName":"STRING","timestamp":"TIMESTAMP"},"retention":{"days":30,"field":"timestamp"}}' \
            '"photoAsset":"ASSETID"' '"LockedAppList":{"fields":{"apps":"ASSETID","deviceName":"STRING","updatedAt":"TIMESTAMP"}}' '"retention":{"days":7,"field":"timestamp"}'; do
  contains "$shown" -q -F "$part" || fail "schema show lacks $part: $shown"
done
production=$(nimbus_admin schema show iCloud.com.mirxa.AppLocker --environment production) || exit 1
[ "$production" = "$shown" ] || fail "import without --environment did not load production the same: $production"
printf '%s\n' "$shown" >"$TEST_TMP/shown.json"
nimbus_admin schema import "$TEST_TMP/shown.json" >/dev/null
[ "$(nimbus_admin schema show iCloud.com.mirxa.AppLocker)" = "$shown" ] || fail "re-importing schema show's output changed the schema"
sed 's/"appName":"STRING"/"appName":"INT64"/' "$TEST_TMP/shown.json" >"$TEST_TMP/conflict.json"
if "$NIMBUS_BIN" schema import "$TEST_TMP/conflict.json" --database-url "$NIMBUS_DB_URL" >"$TEST_TMP/conflict.out" 2>&1; then
  fail "importing appName as INT64 over STRING succeeded"
fi
grep -q appName "$TEST_TMP/conflict.out" || fail "the refused import does not name the field: $(cat "$TEST_TMP/conflict.out")"
[ "$(nimbus_admin schema show iCloud.com.mirxa.AppLocker)" = "$shown" ] || fail "a refused import changed the schema"
nimbus_admin schema import "$REPO_DIR/deploy/schemas/maccy.json" --environment production >/dev/null
contains "$(nimbus_admin schema show iCloud.org.p0deje.Maccy --environment production)" -q '"HistoryItemContent"' || fail "import --environment production did not load production"
contains "$(nimbus_admin schema show iCloud.org.p0deje.Maccy)" -q '"HistoryItem' && fail "import --environment production also loaded development"
ok "schema show: types, fields, retention and appendOnly as imported, same in both environments; it re-imports unchanged; a type change is refused; --environment loads one"

expect_no_server_errors
