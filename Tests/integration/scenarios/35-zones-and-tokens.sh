#!/usr/bin/env bash
# Zones and tokens (issue 3): zones/modify create and delete (with its records), ZONE_NOT_FOUND
# after deletion, CHANGE_TOKEN_EXPIRED for a token of a re-created zone, zones/changes against a
# database token (created, changed and deleted zones), reserved names, _defaultZone, zones/list
# tokens usable as records/changes tokens, and records/changes paging, desiredKeys and
# desiredRecordTypes.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
issue_token PHONE alice phone

# zone_names [JSON]: the zone names of an answer, sorted bytewise (docs/api.md promises no order).
zone_names() { printf '%s' "${1-$HTTP_BODY}" | grep -a -o '"zoneID":{"zoneName":"[^"]*"}' | sed 's/.*"zoneName":"\([^"]*\)"}/\1/' | sort | tr '\n' ' ' | sed 's/ $//'; }
# zone_token ZONE [JSON]: the syncToken that follows ZONE's zoneID in a zones answer.
zone_token() { printf '%s' "${2-$HTTP_BODY}" | grep -a -o "\"zoneID\":{\"zoneName\":\"$1\"},\"syncToken\":\"[^\"]*\"" | sed 's/.*"syncToken":"\([^"]*\)"/\1/'; }
modify_zones() { # PAIRS...: create:NAME / delete:NAME
  local ops="" pair
  for pair in "$@"; do ops+="${ops:+,}{\"operationType\":\"${pair%%:*}\",\"zone\":{\"zoneID\":{\"zoneName\":\"${pair#*:}\"}}}"; done
  api_ok "$MAC" zones/modify "{\"operations\":[$ops]}"
}
# zone_items: each zones/modify or zones/lookup item as `NAME ok|deleted|CODE`.
zone_items() {
  local name code deleted
  json_read rows zoneID,uuid zoneName serverErrorCode=- deleted=false <<<"$HTTP_BODY" | while read -r name code deleted; do
    if [ "$code" != - ]; then echo "$name $code"
    elif [ "$deleted" = true ]; then echo "$name deleted"
    else echo "$name ok"; fi
  done | tr '\n' ',' | sed 's/,$//'
}

note "zones/list, zones/changes from no token, create"
api_ok "$PHONE" zones/changes '{}'
[ "$(zone_names)" = _defaultZone ] || fail "zones/changes of a new database: $HTTP_BODY"
db_token0=$(json_last_field syncToken)
modify_zones create:Alpha create:Beta create:Gamma
[ "$(zone_items)" = "Alpha ok,Beta ok,Gamma ok" ] || fail "zones/modify create: $HTTP_BODY"
[ -n "$(zone_token Alpha)" ] || fail "a created zone is answered without its syncToken: $HTTP_BODY"
api_ok "$PHONE" zones/list
[ "$(zone_names)" = "Alpha Beta Gamma _defaultZone" ] || fail "zones/list: $(zone_names)"
ok "three zones created; zones/list names them with _defaultZone"

note "records in the zones"
rec() { printf '{"operationType":"%s","record":{"recordName":"%s","recordType":"%s","fields":%s}}' "$@"; }
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Alpha\"},\"operations\":[$(rec create a1 Note '{"text":{"value":"one"},"size":{"value":1}}'),$(rec create a2 Note '{"text":{"value":"two"},"size":{"value":2}}'),$(rec create a3 Task '{"title":{"value":"three"}}')]}"
expect_item_codes "ok ok ok"
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Beta\"},\"operations\":[$(rec create b1 Note '{"text":{"value":"beta"}}'),$(rec create b2 Note '{"parent":{"value":{"recordName":"b1","action":"DELETE_SELF"},"type":"REFERENCE"}}')]}"
expect_item_codes "ok ok"

note "zones/list tokens are the zones' current records/changes tokens"
api_ok "$PHONE" zones/list
list=$HTTP_BODY
for zone in Alpha Beta Gamma _defaultZone; do
  token=$(zone_token "$zone" "$list")
  [ -n "$token" ] || fail "zones/list has no syncToken for $zone: $list"
  api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"$zone\"},\"syncToken\":\"$token\"}"
  [ -z "$(record_summary)" ] && [ "$(json_last_field moreComing)" = false ] || fail "records/changes of $zone from its zones/list token is not empty: $HTTP_BODY"
done
alpha_list_token=$(zone_token Alpha "$list")
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Alpha\"},\"operations\":[$(rec forceUpdate a4 Note '{"text":{"value":"four"}}')]}"
api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"Alpha\"},\"syncToken\":\"$alpha_list_token\"}"
[ "$(record_summary | cut -d' ' -f1)" = a4 ] || fail "changes since the zones/list token: $(record_summary | tr '\n' ' ')"
ok "each zones/list token returns nothing new; after a write it returns just that write"

note "records/changes: paging, desiredKeys, desiredRecordTypes"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"Alpha"},"resultsLimit":1}'
first=$(record_summary | cut -d' ' -f1)
[ "$(json_last_field moreComing)" = true ] || fail "a page of 1 of 4 records without moreComing"
collected=$first token=$(json_last_field syncToken)
while :; do
  api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"Alpha\"},\"resultsLimit\":1,\"syncToken\":\"$token\"}"
  collected+=" $(record_summary | cut -d' ' -f1)"
  token=$(json_last_field syncToken)
  [ "$(json_last_field moreComing)" = true ] || break
done
[ "$(echo $collected)" = "a1 a2 a3 a4" ] || fail "pages of 1 collected '$collected'"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"Alpha"},"desiredRecordTypes":["Task"]}'
[ "$(record_summary | cut -d' ' -f1 | tr '\n' ' ')" = "a3 " ] || fail "desiredRecordTypes [Task]: $(record_summary | tr '\n' ' ')"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"Alpha"},"desiredKeys":["size"],"desiredRecordTypes":["Note"]}'
[ "$(record_summary | cut -d' ' -f1 | tr '\n' ' ')" = "a1 a2 a4 " ] || fail "desiredRecordTypes [Note]: $(record_summary | tr '\n' ' ')"
[ "$(field_value a2 size)" = 2 ] || fail "desiredKeys [size] dropped size: $HTTP_BODY"
! contains "$HTTP_BODY" -a -q '"text":' || fail "desiredKeys [size] still returns text: $HTTP_BODY"
ok "pages of 1 give a1..a4 in order with moreComing; desiredRecordTypes and desiredKeys filter"

note "zones/changes against a database token"
api_ok "$PHONE" zones/changes '{}'
db_token1=$(json_last_field syncToken)
[ "$(zone_names)" = "Alpha Beta Gamma _defaultZone" ] || fail "zones/changes from no token: $(zone_names)"
api_ok "$PHONE" zones/changes "{\"syncToken\":\"$db_token1\"}"
[ -z "$(zone_names)" ] || fail "zones/changes right after its own token: $(zone_names)"
api_ok "$PHONE" zones/changes "{\"syncToken\":\"$db_token0\"}"
[ "$(echo $(zone_names | tr ' ' '\n' | sort))" = "Alpha Beta Gamma" ] || fail "zones/changes since before the creates: $(zone_names)"
modify_zones create:Delta
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Gamma\"},\"operations\":[$(rec create g1 Note '{"text":{"value":"g"}}')]}"
modify_zones delete:Beta
[ "$(zone_items)" = "Beta deleted" ] || fail "zones/modify delete: $HTTP_BODY"
api_ok "$PHONE" zones/changes "{\"syncToken\":\"$db_token1\"}"
changes=$HTTP_BODY
[ "$(echo $(zone_names "$changes" | tr ' ' '\n' | sort))" = "Beta Delta Gamma" ] || fail "zones/changes: $(zone_names "$changes") (want Beta deleted, Delta created, Gamma changed)"
contains "$changes" -a -q '{"zoneID":{"zoneName":"Beta"},"deleted":true}' || fail "Beta is not reported deleted: $changes"
contains "$changes" -a -q '{"zoneID":{"zoneName":"Gamma"},"syncToken":"' || fail "Gamma without its token: $changes"
gamma_token=$(zone_token Gamma "$changes")
api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"Gamma\"},\"syncToken\":\"$gamma_token\"}"
[ -z "$(record_summary)" ] || fail "the token zones/changes gives for Gamma is not current: $(record_summary)"
db_token2=$(json_last_field syncToken "$changes")
api_ok "$PHONE" zones/changes "{\"syncToken\":\"$db_token2\"}"
[ -z "$(zone_names)" ] || fail "zones/changes after catching up: $(zone_names)"
api_ok "$PHONE" zones/changes "{\"syncToken\":\"$db_token1\",\"resultsLimit\":1}"
[ "$(json_last_field moreComing)" = true ] || fail "zones/changes of 3 zones with resultsLimit 1 without moreComing: $HTTP_BODY"
seen=$(zone_names) token=$(json_last_field syncToken)
while :; do
  api_ok "$PHONE" zones/changes "{\"syncToken\":\"$token\",\"resultsLimit\":1}"
  seen+=" $(zone_names)"
  token=$(json_last_field syncToken)
  [ "$(json_last_field moreComing)" = true ] || break
done
[ "$(echo $(echo $seen | tr ' ' '\n' | sort))" = "Beta Delta Gamma" ] || fail "zones/changes in pages of 1: '$seen'"
ok "zones/changes: Delta created, Gamma changed (with its current token), Beta deleted: true; nothing after; pages of 1"

note "a deleted zone: its records are gone, every route answers ZONE_NOT_FOUND"
for request in "records/changes|{\"zoneID\":{\"zoneName\":\"Beta\"}}" \
               "records/lookup|{\"zoneID\":{\"zoneName\":\"Beta\"},\"records\":[{\"recordName\":\"b1\"}]}" \
               "records/query|{\"zoneID\":{\"zoneName\":\"Beta\"},\"query\":{\"recordType\":\"Note\"}}" \
               "records/modify|{\"zoneID\":{\"zoneName\":\"Beta\"},\"operations\":[$(rec forceUpdate b3 Note '{"text":{"value":"x"}}')]}"; do
  api "$PHONE" "${request%%|*}" "${request#*|}"
  expect_api_error 404 ZONE_NOT_FOUND "${request%%|*} on the deleted zone"
done
api_ok "$PHONE" zones/lookup '{"zones":[{"zoneName":"Alpha"},{"zoneName":"Beta"},{"zoneName":"_defaultZone"}]}'
[ "$(zone_items)" = "Alpha ok,Beta ZONE_NOT_FOUND,_defaultZone ok" ] || fail "zones/lookup: $HTTP_BODY"
api_ok "$PHONE" zones/list
[ "$(zone_names)" = "Alpha Delta Gamma _defaultZone" ] || fail "zones/list after deleting Beta: $(zone_names)"
modify_zones delete:Beta
[ "$(zone_items)" = "Beta ZONE_NOT_FOUND" ] || fail "deleting a deleted zone: $HTTP_BODY"
ok "deleted zone: ZONE_NOT_FOUND on records/changes, lookup, query, modify, zones/lookup, a second delete; gone from zones/list"

note "re-creating the zone: empty, and tokens of the old zone are CHANGE_TOKEN_EXPIRED"
beta_old_token=$(zone_token Beta "$list")
modify_zones create:Beta
[ "$(zone_items)" = "Beta ok" ] || fail "re-create Beta: $HTTP_BODY"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"Beta"}}'
[ -z "$(record_summary)" ] || fail "the re-created zone still holds $(record_summary | tr '\n' ' ')"
api_ok "$PHONE" records/lookup '{"zoneID":{"zoneName":"Beta"},"records":[{"recordName":"b1"},{"recordName":"b2"}]}'
expect_item_codes "NOT_FOUND NOT_FOUND" "old records in the re-created zone"
api "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"Beta\"},\"syncToken\":\"$beta_old_token\"}"
expect_api_error 410 CHANGE_TOKEN_EXPIRED "a token of the zone before it was deleted and re-created"
# The old zone's DELETE_SELF edge is gone too: a new b2 pointing at a new b1 behaves normally.
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Beta\"},\"operations\":[$(rec create b1 Note '{"text":{"value":"new"}}'),$(rec create b9 Note '{"text":{"value":"unrelated"}}')]}"
expect_item_codes "ok ok"
api_ok "$MAC" records/lookup '{"zoneID":{"zoneName":"Beta"},"records":[{"recordName":"b1"}]}'
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Beta\"},\"operations\":[{\"operationType\":\"delete\",\"record\":{\"recordName\":\"b1\",\"recordChangeTag\":\"$(record_tag b1)\"}}]}"
api_ok "$MAC" records/lookup '{"zoneID":{"zoneName":"Beta"},"records":[{"recordName":"b9"}]}'
expect_item_codes ok "an unrelated record after deleting b1 in the re-created zone"
ok "re-created zone starts empty; the old token answers 410 CHANGE_TOKEN_EXPIRED"

note "DELETE_SELF cascades transitively within the zone; create without a name gets a UUID"
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Tree"}}}]}'
ref() { printf '{"parent":{"value":{"recordName":"%s","action":"DELETE_SELF"},"type":"REFERENCE"}}' "$1"; }
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Tree\"},\"operations\":[$(rec create root Node '{"depth":{"value":0}}'),$(rec create child Node "$(ref root)"),$(rec create grandchild Node "$(ref child)"),$(rec create loose Node '{"parent":{"value":{"recordName":"root","action":"NONE"},"type":"REFERENCE"}}')]}"
expect_item_codes "ok ok ok ok" "a tree"
api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"Tree"}}'
tree_token=$(json_last_field syncToken)
api_ok "$MAC" records/modify '{"zoneID":{"zoneName":"Tree"},"operations":[{"operationType":"forceDelete","record":{"recordName":"root"}}]}'
[ "$(record_items)" = '{"recordName":"root","deleted":true}' ] || fail "deleting root answered $HTTP_BODY"
api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"Tree\"},\"syncToken\":\"$tree_token\"}"
[ "$(record_summary | sort | tr '\n' ' ')" = "child - grandchild - root - " ] || fail "cascade tombstones: $(record_summary | tr '\n' ' ')"
api_ok "$PHONE" records/lookup '{"zoneID":{"zoneName":"Tree"},"records":[{"recordName":"loose"},{"recordName":"grandchild"}]}'
expect_item_codes "ok NOT_FOUND" "a NONE reference survives, the grandchild does not"
api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Tree\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordType\":\"Node\",\"fields\":{\"depth\":{\"value\":9}}}},{\"operationType\":\"create\",\"record\":{\"recordName\":\"\",\"recordType\":\"Node\"}}]}"
expect_item_codes "ok ok" "creates without a recordName"
generated=$(record_summary | cut -d' ' -f1 | tr '\n' ' ')
[[ $generated =~ ^[0-9A-Fa-f-]{36}\ [0-9A-Fa-f-]{36}\ $ ]] || fail "generated names are not UUIDs: '$generated'"
ok "deleting root tombstones child and grandchild (DELETE_SELF, transitive), not a NONE referrer; nameless creates get UUIDs"

note "reserved names and _defaultZone"
modify_zones create:_private create:_ create:Epsilon create:_defaultZone delete:_defaultZone create:Alpha
[ "$(zone_items)" = "_private BAD_REQUEST,_ BAD_REQUEST,Epsilon ok,_defaultZone ok,_defaultZone BAD_REQUEST,Alpha ok" ] \
  || fail "zones/modify with reserved names: $(zone_items) — $HTTP_BODY"
expect_error_body BAD_REQUEST "$(contains "$HTTP_BODY" -a -o '{"zoneID":{"zoneName":"_private"}[^}]*}')"
api_ok "$PHONE" records/lookup '{"zoneID":{"zoneName":"Alpha"},"records":[{"recordName":"a1"}]}'
expect_item_codes ok "a record of Alpha after creating Alpha again"
api_ok "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"Alpha\"},\"syncToken\":\"$alpha_list_token\"}"
[ "$(record_summary | cut -d' ' -f1)" = a4 ] || fail "creating an existing zone disturbed its feed: $(record_summary | tr '\n' ' ')"
api_ok "$PHONE" zones/list
[ "$(zone_names)" = "Alpha Beta Delta Epsilon Gamma Tree _defaultZone" ] || fail "zones/list: $(zone_names)"
ok "_private and _ refused, _defaultZone create succeeds and delete is a BAD_REQUEST item; creating an existing zone keeps its records and tokens"

expect_no_server_errors
