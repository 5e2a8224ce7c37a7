#!/usr/bin/env bash
# Isolation (issue 3): a second user's token sees none of the first user's zones, records or
# changes, and every route answers it exactly as it answers names that do not exist (same HTTP
# status, same serverErrorCode, same reason once the name is swapped).
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
issue_token ALICE alice mac
issue_token BOB bob mac

note "alice's data: records in _defaultZone and in her zone Secrets"
api_ok "$ALICE" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Secrets"}}}]}'
api_ok "$ALICE" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"alice-note","recordType":"Note","fields":{"text":{"value":"alice only"}}}}]}'
expect_item_codes ok
alice_tag=$(record_tag alice-note)
api_ok "$ALICE" records/modify '{"zoneID":{"zoneName":"Secrets"},"operations":[{"operationType":"create","record":{"recordName":"alice-secret","recordType":"Note","fields":{"text":{"value":"hidden"}}}}]}'
expect_item_codes ok
api_ok "$ALICE" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
alice_default_token=$(json_last_field syncToken)
api_ok "$ALICE" records/changes '{"zoneID":{"zoneName":"Secrets"}}'
alice_secrets_token=$(json_last_field syncToken)
api_ok "$ALICE" zones/changes '{}'
alice_db_token=$(json_last_field syncToken)

# answer NAME: the last answer as "STATUS BODY" with uuids removed and NAME replaced by @.
answer() {
  printf '%s %s' "$HTTP_STATUS" "$HTTP_BODY" | sed -e 's/"uuid":"[^"]*",\?//g' -e "s/$1/@/g"
}

# same_as_missing WHAT OP FOREIGN MISSING BODY: BOB's answer for BODY with @ replaced by alice's
# FOREIGN name equals his answer with a name that exists nowhere; echoes that answer.
same_as_missing() {
  local what=$1 op=$2 foreign=$3 missing=$4 body=$5 a b
  api "$BOB" "$op" "${body//@/$foreign}"
  a=$(answer "$foreign")
  api "$BOB" "$op" "${body//@/$missing}"
  b=$(answer "$missing")
  [ "$a" = "$b" ] || fail "$what: alice's $foreign answers differently from a missing name:
  foreign: ${a:0:400}
  missing: ${b:0:400}"
  printf '%s\n' "$a"
}

note "records/lookup, records/modify, records/query, records/changes with alice's names"
got=$(same_as_missing "records/lookup" records/lookup alice-note no-such-note '{"records":[{"recordName":"@"}]}') || exit 1
[[ $got == "200 "*'"serverErrorCode":"NOT_FOUND"'* ]] || fail "records/lookup of a foreign record: $got"
ok "records/lookup: alice's record is a NOT_FOUND item, as a missing one"

got=$(same_as_missing "records/lookup in alice's zone" records/lookup Secrets NoSuchZone '{"zoneID":{"zoneName":"@"},"records":[{"recordName":"alice-secret"}]}') || exit 1
[[ $got == "404 "*'"serverErrorCode":"ZONE_NOT_FOUND"'* ]] || fail "records/lookup in a foreign zone: $got"
ok "records/lookup in alice's zone: 404 ZONE_NOT_FOUND, as a missing zone"

for kind in update replace delete; do
  got=$(same_as_missing "records/modify $kind" records/modify alice-note no-such-note \
    '{"operations":[{"operationType":"'$kind'","record":{"recordName":"@","recordType":"Note","recordChangeTag":"'"$alice_tag"'","fields":{"text":{"value":"bob was here"}}}}]}') || exit 1
  [[ $got == "200 "*'"serverErrorCode":"NOT_FOUND"'* ]] || fail "records/modify $kind of a foreign record: $got"
done
got=$(same_as_missing "records/modify forceDelete" records/modify alice-note no-such-note '{"operations":[{"operationType":"forceDelete","record":{"recordName":"@"}}]}') || exit 1
[[ $got == '200 {"records":[{"recordName":"@","deleted":true}]}' ]] || fail "forceDelete of a foreign record: $got"
got=$(same_as_missing "records/modify in alice's zone" records/modify Secrets NoSuchZone '{"zoneID":{"zoneName":"@"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"alice-secret","recordType":"Note","fields":{"text":{"value":"bob"}}}}]}') || exit 1
[[ $got == "404 "*'"serverErrorCode":"ZONE_NOT_FOUND"'* ]] || fail "records/modify in a foreign zone: $got"
ok "records/modify update/replace/delete: NOT_FOUND items; forceDelete: deleted; alice's zone: ZONE_NOT_FOUND — all as for missing names"

# bob's create under alice's name makes his own record; it must not answer EXISTS.
api_ok "$BOB" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"alice-note","recordType":"Note","fields":{"text":{"value":"bob own"}}}}]}'
expect_item_codes ok "bob's create of a name alice uses"
api_ok "$BOB" records/modify '{"operations":[{"operationType":"forceDelete","record":{"recordName":"alice-note"}}]}'
ok "bob's create of alice's record name is his own record (no EXISTS)"

api_ok "$BOB" records/query '{"query":{"recordType":"Note"}}'
[ -z "$(record_summary)" ] || fail "bob's query for Note found $(record_summary | tr '\n' ' ')"
got=$(same_as_missing "records/query in alice's zone" records/query Secrets NoSuchZone '{"zoneID":{"zoneName":"@"},"query":{"recordType":"Note"}}') || exit 1
[[ $got == "404 "*'"serverErrorCode":"ZONE_NOT_FOUND"'* ]] || fail "records/query in a foreign zone: $got"
ok "records/query: no Note of alice's; her zone is ZONE_NOT_FOUND as a missing one"

api_ok "$BOB" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
[ -z "$(record_summary)" ] || fail "bob's _defaultZone changes carry $(record_summary | tr '\n' ' ')"
bob_default_token=$(json_last_field syncToken)
got=$(same_as_missing "records/changes on alice's zone" records/changes Secrets NoSuchZone '{"zoneID":{"zoneName":"@"}}') || exit 1
[[ $got == "404 "*'"serverErrorCode":"ZONE_NOT_FOUND"'* ]] || fail "records/changes on a foreign zone: $got"

# A token is bound to its database and zone: alice's is refused as a forged one is.
forged=${alice_default_token:0:20}A${alice_default_token:21}
[ "$forged" != "$alice_default_token" ] || forged=${alice_default_token:0:20}B${alice_default_token:21}
got=$(same_as_missing "alice's syncToken on bob's _defaultZone" records/changes "$alice_default_token" "$forged" '{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"@"}') || exit 1
[[ $got == "400 "*'"serverErrorCode":"BAD_REQUEST"'* ]] || fail "alice's token on bob's zone: $got"
api_ok "$BOB" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Secrets"}}}]}'
got=$(same_as_missing "alice's Secrets token on bob's Secrets" records/changes "$alice_secrets_token" "$forged" '{"zoneID":{"zoneName":"Secrets"},"syncToken":"@"}') || exit 1
[[ $got == "400 "*'"serverErrorCode":"BAD_REQUEST"'* ]] || fail "alice's token on bob's zone of the same name: $got"
api_ok "$BOB" records/changes '{"zoneID":{"zoneName":"Secrets"}}'
[ -z "$(record_summary)" ] || fail "bob's own Secrets zone shows $(record_summary | tr '\n' ' ')"
ok "records/changes: alice's zone ZONE_NOT_FOUND, alice's tokens BAD_REQUEST as forged ones, even on bob's zone of the same name"

note "zones/lookup, zones/list, zones/changes, zones/modify"
api_ok "$BOB" zones/modify '{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Secrets"}}}]}'
got=$(same_as_missing "zones/lookup" zones/lookup Secrets NoSuchZone '{"zones":[{"zoneName":"@"}]}') || exit 1
[[ $got == "200 "*'"serverErrorCode":"ZONE_NOT_FOUND"'* ]] || fail "zones/lookup of a foreign zone: $got"
got=$(same_as_missing "zones/modify delete" zones/modify Secrets NoSuchZone '{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"@"}}}]}') || exit 1
[[ $got == "200 "*'"serverErrorCode":"ZONE_NOT_FOUND"'* ]] || fail "zones/modify delete of a foreign zone: $got"
api_ok "$BOB" zones/list
[ "$(contains "$HTTP_BODY" -a -o '"zoneName":"[^"]*"' | tr '\n' ' ')" = '"zoneName":"_defaultZone" ' ] || fail "bob's zones/list: $HTTP_BODY"
api_ok "$BOB" zones/changes '{}'
[ "$(contains "$HTTP_BODY" -a -o '"zoneName":"[^"]*"' | sort -u | tr '\n' ' ')" = '"zoneName":"_defaultZone" ' ] || fail "bob's zones/changes: $HTTP_BODY"
forged_db=${alice_db_token:0:20}A${alice_db_token:21}
[ "$forged_db" != "$alice_db_token" ] || forged_db=${alice_db_token:0:20}B${alice_db_token:21}
got=$(same_as_missing "alice's database token" zones/changes "$alice_db_token" "$forged_db" '{"syncToken":"@"}') || exit 1
[[ $got == "400 "*'"serverErrorCode":"BAD_REQUEST"'* ]] || fail "alice's database token on bob's zones/changes: $got"
api_ok "$BOB" users/current
[ "$(json_field userRecordName)" != "" ] || fail "users/current without userRecordName"
bob_user=$(json_field userRecordName)
api_ok "$ALICE" users/current
[ "$(json_field userRecordName)" != "$bob_user" ] || fail "alice and bob share userRecordName $bob_user"
ok "zones: alice's zone is ZONE_NOT_FOUND in lookup and delete, absent from list and changes; her database token is BAD_REQUEST as a forged one"

note "other containers and environments are other databases too"
API_CONTAINER=iCloud.org.p0deje.Maccy
api_ok "$ALICE" records/lookup '{"records":[{"recordName":"alice-note"}]}'
expect_item_codes NOT_FOUND "alice's record seen from another container"
API_CONTAINER=iCloud.com.mirxa.AppLocker API_ENV=production
api_ok "$ALICE" records/lookup '{"records":[{"recordName":"alice-note"}]}'
expect_item_codes NOT_FOUND "alice's development record seen from production"
API_ENV=development
ok "alice's development record is absent from another container and from production"

note "alice's data is untouched"
api_ok "$ALICE" records/lookup '{"records":[{"recordName":"alice-note"}]}'
[ "$(record_tag alice-note)" = "$alice_tag" ] || fail "alice's record changed: $HTTP_BODY"
[ "$(field_value alice-note text)" = '"alice only"' ] || fail "alice's text changed: $HTTP_BODY"
api_ok "$ALICE" records/changes '{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"'"$alice_default_token"'"}'
[ -z "$(record_summary)" ] || fail "alice's feed shows bob's writes: $(record_summary | tr '\n' ' ')"
api_ok "$ALICE" records/changes '{"zoneID":{"zoneName":"Secrets"},"syncToken":"'"$alice_secrets_token"'"}'
[ -z "$(record_summary)" ] || fail "alice's Secrets feed changed: $(record_summary | tr '\n' ' ')"
api_ok "$ALICE" zones/list
[ "$(contains "$HTTP_BODY" -a -o '"zoneName":"[^"]*"' | sort | tr '\n' ' ')" = '"zoneName":"Secrets" "zoneName":"_defaultZone" ' ] || fail "alice's zones/list: $HTTP_BODY"
api "$ALICE" records/changes '{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"'"$bob_default_token"'"}'
expect_api_error 400 BAD_REQUEST "bob's token on alice's zone"
ok "alice's records, feeds and zones are as she left them; bob's token is refused on her zone"

expect_no_server_errors
