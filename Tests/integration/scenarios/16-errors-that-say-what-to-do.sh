#!/usr/bin/env bash
# The errors a new user meets say what to do (issue 16, friction 3 and 6-8), over curl and the CLI:
# - production: a type that exists in development but is not deployed says to deploy it; a
#   mistyped type says "did you mean"; a mistyped field too; a query for a mistyped type as well;
#   the shipped MappLock schema is for iCloud.com.mapplock.universal;
# - ASSETID receipts: none, not this database's (forged or another user's: the same answer, as
#   isolation demands), another checksum: three reasons;
#   assets/upload for a STRING field, or (production) an unknown type: 400 naming the field;
# - a cut sync token says to fetch again without a token; an oversized record says to store large
#   values as an ASSETID; an oversized request says to split it; a TIMESTAMP in seconds in a
#   retention field says milliseconds since 1970;
# - `nimbus schema import` of a file with an unknown field type names it and lists the valid ones.
source "$(dirname "$0")/../lib.sh"

start_store_server --max-record-bytes 4096 --max-request-bytes 65536
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
issue_token ALICE alice mac
issue_token BOB bob mac

# expect_reason STATUS_OR_ITEM TEXT WHAT: the last answer (an error or its first item) says TEXT.
expect_reason() {
  [[ $HTTP_BODY == *"$1"* ]] || fail "$2: the answer does not say '$1': ${HTTP_BODY:0:500}"
  ok "$2: $(json_field reason | cut -c1-220)"
}

note "the shipped MappLock schema, and production errors"
grep -q '"container": "iCloud.com.mapplock.universal"' "$REPO_DIR/deploy/schemas/mapplock.json" || fail "mapplock.json is not for iCloud.com.mapplock.universal"
nimbus_admin schema import "$REPO_DIR/deploy/schemas/mapplock.json" >/dev/null
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" --environment production >/dev/null
API_ENV=development
api_ok "$ALICE" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"dev-1","recordType":"DraftNote","fields":{"text":{"value":"x"}}}}]}'
API_ENV=production
api_ok "$ALICE" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"n1","recordType":"DraftNote","fields":{"text":{"value":"x"}}}}]}'
expect_item_codes BAD_REQUEST "a development-only type in production"
expect_reason "Record type DraftNote exists in development but is not deployed to production; deploy it with \`nimbus schema deploy iCloud.com.mirxa.AppLocker\`" "a type in development only"
api_ok "$ALICE" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"e1","recordType":"BlockedAppEvnt","fields":{"appName":{"value":"Safari"}}}}]}'
expect_reason 'does not exist in iCloud.com.mirxa.AppLocker (in production or development); did you mean BlockedAppEvent?' "a mistyped type"
api_ok "$ALICE" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"e2","recordType":"BlockedAppEvent","fields":{"appNam":{"value":"Safari"}}}}]}'
expect_reason 'Field \"appNam\" of BlockedAppEvent does not exist in iCloud.com.mirxa.AppLocker; did you mean appName?' "a mistyped field"
api "$ALICE" records/query '{"query":{"recordType":"FailedAuthEvnt"}}'
expect_api_error 400 BAD_REQUEST "a query for a mistyped type"
expect_reason 'did you mean FailedAuthEvent?' "a query for a mistyped type"

note "asset uploads and receipts"
api "$ALICE" assets/upload '{"tokens":[{"recordType":"BlockedAppEvent","fieldName":"appName"}]}'
expect_api_error 400 BAD_REQUEST "assets/upload for a STRING field"
expect_reason 'Field appName of BlockedAppEvent is STRING, not ASSETID' "assets/upload for a STRING field"
api "$ALICE" assets/upload '{"tokens":[{"recordType":"Photo","fieldName":"image"}]}'
expect_api_error 400 BAD_REQUEST "assets/upload for an unknown type in production"
expect_reason 'Record type \"Photo\" does not exist in iCloud.com.mirxa.AppLocker (in production or development); the deployed record types are BlockedAppEvent, ' "assets/upload for an unknown type in production"
API_ENV=development
random_file "$TEST_TMP/photo" 1000
upload_asset "$ALICE" "$TEST_TMP/photo"
alice_receipt=$UP_RECEIPT alice_checksum=$UP_CHECKSUM
random_file "$TEST_TMP/other" 1000
upload_asset "$BOB" "$TEST_TMP/other"
bob_field=$UP_FIELD
save_asset() {  # save_asset VALUE_JSON: a Blob with that ASSETID value, by alice
  api_ok "$ALICE" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"blob-$RANDOM\",\"recordType\":\"Blob\",\"fields\":{\"data\":$1}}}]}"
  expect_item_codes BAD_REQUEST "an ASSETID value with a bad receipt"
}
save_asset "{\"value\":{\"fileChecksum\":\"$alice_checksum\",\"size\":1000},\"type\":\"ASSETID\"}"
expect_reason "has no receipt; upload the bytes with assets/upload" "no receipt"
save_asset "{\"value\":{\"fileChecksum\":\"$alice_checksum\",\"size\":1000,\"receipt\":\"${alice_receipt%?}x\"},\"type\":\"ASSETID\"}"
expect_reason "the receipt is not one this database issued (it was altered, or belongs to another user" "a forged receipt"
forged_reason=$(json_field reason | sed 's/blob-[0-9]*/blob-N/')
save_asset "$bob_field"
expect_reason "the receipt is not one this database issued (it was altered, or belongs to another user" "another user's receipt"
[ "$(json_field reason | sed 's/blob-[0-9]*/blob-N/')" = "$forged_reason" ] || fail "another user's receipt is told apart from a forged one (the isolation matrix forbids it)"
save_asset "{\"value\":{\"fileChecksum\":\"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\",\"size\":1000,\"receipt\":\"$alice_receipt\"},\"type\":\"ASSETID\"}"
expect_reason "the receipt is for fileChecksum $alice_checksum and size 1000, not fileChecksum 47DEQpj8" "a tampered checksum"

note "tokens, sizes and seconds"
api_ok "$ALICE" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
token=$(json_last_field syncToken)
api "$ALICE" records/changes "{\"zoneID\":{\"zoneName\":\"_defaultZone\"},\"syncToken\":\"${token:0:20}\"}"
expect_api_error 400 BAD_REQUEST "a cut sync token"
expect_reason "fetch again without a token" "a cut sync token"
api "$ALICE" zones/changes '{"syncToken":"garbage"}'
expect_api_error 400 BAD_REQUEST "a garbage database token"
expect_reason "fetch again without a token" "a garbage database token"
big=$(head -c 5000 /dev/zero | tr '\0' a)
api_ok "$ALICE" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"big\",\"recordType\":\"Note\",\"fields\":{\"text\":{\"value\":\"$big\"}}}}]}"
expect_item_codes LIMIT_EXCEEDED "a record over maxRecordBytes"
expect_reason "store large values as an ASSETID (upload them with assets/upload)" "a record over maxRecordBytes"
head -c 70000 /dev/zero | tr '\0' ' ' >"$TEST_TMP/huge.json"
api "$ALICE" records/modify "@$TEST_TMP/huge.json"
expect_status 413 "a request over maxRequestBytes"
expect_reason "split it into smaller requests" "a request over maxRequestBytes"
API_ENV=production
api_ok "$ALICE" records/modify "{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"secs\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"Safari\"},\"timestamp\":{\"value\":$(date +%s),\"type\":\"TIMESTAMP\"}}}}]}"
expect_item_codes BAD_REQUEST "a TIMESTAMP in seconds in a retention field"
expect_reason "TIMESTAMP values are milliseconds since 1970" "a TIMESTAMP in seconds in a retention field"

note "a schema file with an unknown field type"
printf '{"container":"iCloud.x","recordTypes":{"Event":{"fields":{"when":"DATE"}}}}' >"$TEST_TMP/bad-schema.json"
"$NIMBUS_BIN" schema import "$TEST_TMP/bad-schema.json" --database-url "$NIMBUS_DB_URL" >"$TEST_TMP/schema.out" 2>&1 && fail "a bad schema file was imported"
grep -q 'field Event.when has the unknown type "DATE"; the field types are STRING, INT64, DOUBLE, TIMESTAMP, BYTES, REFERENCE, ASSETID' "$TEST_TMP/schema.out" \
  || fail "the schema file error: $(cat "$TEST_TMP/schema.out")"
ok "schema import: $(cat "$TEST_TMP/schema.out")"
expect_no_server_errors
finish_scenario
