#!/usr/bin/env bash
# Bad input (issue 3): every malformed, mistyped, out-of-range, unauthenticated or over-limit
# request is a 4xx with the docs/api.md error shape {uuid, serverErrorCode, reason} (or a BAD_REQUEST
# item inside a 200 where docs/api.md says the error is about one record), and never a 500.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token TOK alice mac
issue_token OTHER alice phone
api_ok "$TOK" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z"}}}]}'
api_ok "$TOK" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"r1","recordType":"Note","fields":{"text":{"value":"hello"},"count":{"value":1},"when":{"value":1795000000000,"type":"TIMESTAMP"}}}}]}'
expect_item_codes ok
r1_tag=$(record_tag r1)

# bad OP BODY STATUS CODE WHAT: a request-level error.
bad() {
  api "$TOK" "$1" "$2"
  expect_api_error "$3" "$4" "$5"
}

# bad_item OP BODY CODE WHAT: a 200 whose only item is an error CODE in the API shape.
bad_item() {
  api "$TOK" "$1" "$2"
  expect_status 200 "$4"
  expect_item_codes "$3" "$4"
  expect_error_body "$3" "$(record_items)"
}

all_posts="records/modify records/lookup records/query records/changes zones/lookup zones/modify zones/changes"

note "malformed JSON and bodies that are not objects"
for op in $all_posts; do
  for body in '{"operations":[' '{"a":1,}' '{"a" 1}' "{'a':1}" '{"a":tru}' '{"a":1}x' '{"a":"\x"}' '[]' '"x"' '42' 'null' 'true'; do
    bad "$op" "$body" 400 BAD_REQUEST "$op with body $body"
  done
done
printf '{"operations":"\xff\xfe"}' >"$TEST_TMP/invalid-utf8.json"
bad records/modify "@$TEST_TMP/invalid-utf8.json" 400 BAD_REQUEST "invalid UTF-8"
# (repeat_char is quadratic in bash: large repeats come from head | tr.)
many() { head -c "$2" /dev/zero | tr '\0' "$1"; }
{ many '[' 100000; many ']' 100000; } >"$TEST_TMP/deep.json"
bad records/modify "@$TEST_TMP/deep.json" 400 BAD_REQUEST "100000 nested arrays"
{ printf '{"a":'; yes '{"a":' | head -n 50000 | tr -d '\n'; printf '1'; many '}' 50001; } >"$TEST_TMP/deep-objects.json"
bad records/query "@$TEST_TMP/deep-objects.json" 400 BAD_REQUEST "50000 nested objects"
ok "malformed JSON, invalid UTF-8, deep nesting and non-object bodies: 400 BAD_REQUEST on all $(wc -w <<<"$all_posts") POST operations"

note "wrong field types (request level)"
while IFS='|' read -r op body what; do
  [ -n "$op" ] || continue
  bad "$op" "$body" 400 BAD_REQUEST "$what"
done <<'CASES'
records/modify|{}|modify without operations
records/modify|{"operations":"x"}|operations a string
records/modify|{"operations":{}}|operations an object
records/modify|{"operations":[],"zoneID":"Z"}|zoneID a string
records/modify|{"operations":[],"zoneID":{"zoneName":5}}|zoneName a number
records/modify|{"operations":[],"zoneID":{}}|zoneID without zoneName
records/modify|{"operations":[],"atomic":"yes"}|atomic a string
records/modify|{"operations":[],"desiredKeys":"text"}|desiredKeys a string
records/modify|{"operations":[],"desiredKeys":[1]}|desiredKeys of numbers
records/lookup|{}|lookup without records
records/lookup|{"records":"r1"}|records a string
records/lookup|{"records":[{"recordName":5}]}|recordName a number
records/lookup|{"records":["r1"]}|records of strings
records/query|{}|query without query
records/query|{"query":[]}|query an array
records/query|{"query":{}}|query without recordType
records/query|{"query":{"recordType":5}}|recordType a number
records/query|{"query":{"recordType":"Note","filterBy":{}}}|filterBy an object
records/query|{"query":{"recordType":"Note","sortBy":"text"}}|sortBy a string
records/query|{"query":{"recordType":"Note","sortBy":[{"fieldName":"text","ascending":"yes"}]}}|ascending a string
records/query|{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"EQUALS"}]}}|filter without fieldValue
records/query|{"query":{"recordType":"Note","filterBy":[{"fieldName":"count","comparator":"EQUALS","fieldValue":{"value":"one"}}]}}|filter value of the wrong type
records/query|{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"IN","fieldValue":{"value":"hello"}}]}}|IN with a scalar
records/query|{"query":{"recordType":"Note"},"resultsLimit":"7"}|resultsLimit a string
records/query|{"query":{"recordType":"Note"},"resultsLimit":1.5}|resultsLimit a fraction
records/query|{"query":{"recordType":"Note"},"continuationMarker":5}|continuationMarker a number
records/query|{"query":{"recordType":"Note"},"continuationMarker":"bm90IGEgbWFya2Vy"}|forged continuationMarker
records/changes|{}|changes without zoneID
records/changes|{"zoneID":{"zoneName":"_defaultZone"},"syncToken":5}|syncToken a number
records/changes|{"zoneID":{"zoneName":"_defaultZone"},"syncToken":""}|syncToken empty
records/changes|{"zoneID":{"zoneName":"_defaultZone"},"resultsLimit":"7"}|changes resultsLimit a string
records/changes|{"zoneID":{"zoneName":"_defaultZone"},"desiredRecordTypes":"Note"}|desiredRecordTypes a string
records/changes|{"zoneID":{"zoneName":"_defaultZone"},"desiredKeys":{}}|changes desiredKeys an object
zones/lookup|{}|zones/lookup without zones
zones/lookup|{"zones":"Z"}|zones a string
zones/lookup|{"zones":[5]}|zones of numbers
zones/modify|{}|zones/modify without operations
zones/modify|{"operations":"x"}|zones/modify operations a string
zones/changes|{"syncToken":5}|zones/changes syncToken a number
zones/changes|{"resultsLimit":"x"}|zones/changes resultsLimit a string
CASES
ok "wrong top-level field types: 400 BAD_REQUEST"

note "unknown operationType (item) and comparator (request)"
api_ok "$TOK" records/modify '{"operations":[{"operationType":"upsert","record":{"recordName":"u1","recordType":"Note"}},{"operationType":"create","record":{"recordName":"u2","recordType":"Note","fields":{"text":{"value":"fine"}}}}]}'
expect_item_codes "BAD_REQUEST ok" "unknown operationType beside a good operation"
expect_error_body BAD_REQUEST "$(record_items | sed -n 1p)"
[[ $(json_field reason "$(record_items | sed -n 1p)") == *upsert* ]] || fail "the reason does not name the operationType: $HTTP_BODY"
bad records/query '{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"LIKE","fieldValue":{"value":"h%"}}]}}' 400 BAD_REQUEST "comparator LIKE"
bad records/query '{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"equals","fieldValue":{"value":"hello"}}]}}' 400 BAD_REQUEST "comparator in lower case"
bad records/query '{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":5,"fieldValue":{"value":"hello"}}]}}' 400 BAD_REQUEST "comparator a number"
ok "unknown operationType: BAD_REQUEST item naming it, the other operation saved; unknown comparator: 400"

note "malformed operations are BAD_REQUEST items"
while IFS='|' read -r op what; do
  [ -n "$op" ] || continue
  bad_item records/modify "{\"operations\":[$op]}" BAD_REQUEST "$what"
done <<'CASES'
"create"|an operation that is a string
{"record":{"recordName":"m1","recordType":"Note"}}|no operationType
{"operationType":5,"record":{"recordName":"m1","recordType":"Note"}}|operationType a number
{"operationType":"create"}|no record
{"operationType":"create","record":"m1"}|record a string
{"operationType":"create","record":{"recordName":5,"recordType":"Note"}}|recordName a number
{"operationType":"create","record":{"recordName":"m1"}}|create without recordType
{"operationType":"create","record":{"recordName":"m1","recordType":"1Note"}}|recordType starting with a digit
{"operationType":"create","record":{"recordName":"m1","recordType":"No-te"}}|recordType with a dash
{"operationType":"update","record":{"recordName":"r1","fields":{"text":{"value":"x"}}}}|update without recordChangeTag
{"operationType":"delete","record":{"recordName":"r1"}}|delete without recordChangeTag
{"operationType":"update","record":{"recordName":"r1","recordChangeTag":5}}|recordChangeTag a number
{"operationType":"update","record":{"recordChangeTag":"1"}}|update without recordName
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":[]}}|fields an array
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"text":"x"}}}|field not an object
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"text":{"type":"STRING"}}}}|field without value
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"text":{"value":"x","type":5}}}}|field type a number
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"text":{"value":"x","type":"VARCHAR"}}}}|unknown field type
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"_x":{"value":"x"}}}}|field name starting with _
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"a-b":{"value":"x"}}}}|field name with a dash
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"blob":{"value":{"a":1}}}}}|untyped object value
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"flag":{"value":true}}}}|untyped boolean value
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"list":{"value":[]}}}}|untyped empty list
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"mixed":{"value":[1,"a"]}}}}|untyped mixed list
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"count":{"value":1.5}}}}|INT64 field with a fraction
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"b":{"value":"***","type":"BYTES"}}}}|BYTES not base64
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"d":{"value":"1.5","type":"DOUBLE"}}}}|DOUBLE given a string
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"l":{"value":["a",1],"type":"STRING_LIST"}}}}|STRING_LIST with a number
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"l":{"value":"a","type":"STRING_LIST"}}}}|STRING_LIST given a string
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"ref":{"value":{"action":"NONE"},"type":"REFERENCE"}}}}|REFERENCE without recordName
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"ref":{"value":{"recordName":"r1","action":"CASCADE"},"type":"REFERENCE"}}}}|REFERENCE with an unknown action
{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"ref":{"value":"r1","type":"REFERENCE"}}}}|REFERENCE given a string
CASES
# Numbers out of range may be refused by the JSON parser (400) or as the record's item.
for number in 1e999 -1e999 9223372036854775808 -9223372036854775809 123456789012345678901234567890; do
  api "$TOK" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"count":{"value":'"$number"'}}}}]}'
  if [ "$HTTP_STATUS" = 400 ]; then
    expect_error_body BAD_REQUEST
  else
    expect_status 200 "INT64 field given $number"
    expect_item_codes BAD_REQUEST "INT64 field given $number"
  fi
done
api_ok "$TOK" records/lookup '{"records":[{"recordName":"m1"}]}'
expect_item_codes NOT_FOUND "m1 after the malformed operations"
ok "malformed operations: BAD_REQUEST items, nothing saved"

# A REFERENCE names a record: its recordName (and zoneName) follow the naming rules.
for ref in '{"recordName":"bad name","action":"NONE"}' '{"recordName":"","action":"NONE"}' "{\"recordName\":\"$(repeat_char r 256)\",\"action\":\"NONE\"}" \
           '{"recordName":"r1","zoneID":{"zoneName":"bad zone"},"action":"NONE"}'; do
  api_ok "$TOK" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"m-ref","recordType":"Note","fields":{"ref":{"value":'"$ref"',"type":"REFERENCE"}}}}]}'
  if [ "$(item_codes)" != BAD_REQUEST ]; then
    defer_fail "a REFERENCE to an invalid name was accepted: ${ref:0:80} → ${HTTP_BODY:0:200}"
    api_ok "$TOK" records/modify '{"operations":[{"operationType":"forceDelete","record":{"recordName":"m-ref"}}]}'
  fi
done

note "a field value of the wrong type names record, field, expected and given type"
api_ok "$TOK" records/modify '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"typed-1","recordType":"Note","fields":{"when":{"value":"yesterday"}}}}]}'
expect_item_codes BAD_REQUEST "TIMESTAMP field given a string"
reason=$(json_field reason "$(record_items)")
for word in typed-1 when TIMESTAMP string; do
  [[ $reason == *"$word"* ]] || fail "the wrong-type reason does not name '$word': $reason"
done
api_ok "$TOK" records/modify '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"typed-2","recordType":"Note","fields":{"count":{"value":"7"}}}}]}'
reason=$(json_field reason "$(record_items)")
for word in typed-2 count INT64 string; do
  [[ $reason == *"$word"* ]] || fail "the wrong-type reason does not name '$word': $reason"
done
api_ok "$TOK" records/modify '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"typed-3","recordType":"Note","fields":{"text":{"value":5,"type":"INT64"}}}}]}'
expect_item_codes BAD_REQUEST "a field declared with another type than the schema's"
reason=$(json_field reason "$(record_items)")
for word in typed-3 text STRING INT64; do
  [[ $reason == *"$word"* ]] || fail "the declared-type reason does not name '$word': $reason"
done
ok "wrong-type reasons name the record, the field, the expected and the given type: $reason"

note "names out of range"
name255=$(repeat_char n 255) name256=$(repeat_char n 256)
api_ok "$TOK" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"'"$name255"'","recordType":"Note","fields":{"text":{"value":"long"}}}},{"operationType":"create","record":{"recordName":"a:b.c_d-9","recordType":"Note"}}]}'
expect_item_codes "ok ok" "255-character and punctuated record names"
for name in "$name256" "a b" "a/b" "caf\\u00e9" "a\\\"b" "a%b" "a\\nb"; do
  bad_item records/modify '{"operations":[{"operationType":"create","record":{"recordName":"'"$name"'","recordType":"Note"}}]}' BAD_REQUEST "record name '${name:0:20}'"
done
api_ok "$TOK" records/lookup '{"records":[{"recordName":"'"$name256"'"},{"recordName":"a b"},{"recordName":"'"$name255"'"}]}'
expect_item_codes "BAD_REQUEST BAD_REQUEST ok" "lookup of invalid names beside a valid one"
type256=N$(repeat_char t 255)
bad_item records/modify '{"operations":[{"operationType":"create","record":{"recordName":"t1","recordType":"'"$type256"'"}}]}' BAD_REQUEST "256-character record type"
field256=f$(repeat_char x 255)
bad_item records/modify '{"operations":[{"operationType":"create","record":{"recordName":"t1","recordType":"Note","fields":{"'"$field256"'":{"value":"x"}}}}]}' BAD_REQUEST "256-character field name"
for zone in "$name256" "a b" "" "_private"; do
  api_ok "$TOK" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"'"$zone"'"}}}]}'
  [ "$(json_field serverErrorCode)" = BAD_REQUEST ] || fail "zones/modify create of zone '${zone:0:20}' answered $HTTP_BODY"
  expect_error_body BAD_REQUEST
done
for zone in "$name256" "a b" ""; do
  bad records/modify '{"zoneID":{"zoneName":"'"$zone"'"},"operations":[]}' 400 BAD_REQUEST "records/modify in zone '${zone:0:20}'"
  bad records/changes '{"zoneID":{"zoneName":"'"$zone"'"}}' 400 BAD_REQUEST "records/changes of zone '${zone:0:20}'"
done
api_ok "$TOK" zones/lookup '{"zones":[{"zoneName":"'"$name256"'"}]}'
[ -n "$(json_field serverErrorCode)" ] || fail "zones/lookup of a 256-character name answered a zone: $HTTP_BODY"
expect_error_body "$(json_field serverErrorCode)"
ok "names: 255 accepted, 256 and bad characters refused for records, types, fields and zones"

note "401: missing, malformed, unknown and revoked tokens"
path=$(api_path records/lookup)
request POST "$path" -H 'Content-Type: application/json' --data-binary '{"records":[]}'
expect_api_error 401 AUTHENTICATION_REQUIRED "no Authorization header"
request GET "$(api_path zones/list)"
expect_api_error 401 AUTHENTICATION_REQUIRED "GET without Authorization"
for header in "Basic x" "Basic $(printf 'alice:pw' | base64)" "Bearer" "Bearer " "Token $TOK" "bearer-$TOK" "Bearer $TOK extra" "Bearer ${TOK}x" "Bearer nope"; do
  request POST "$path" -H "Authorization: $header" -H 'Content-Type: application/json' --data-binary '{"records":[]}'
  expect_api_error 401 AUTHENTICATION_FAILED "Authorization: ${header:0:30}"
done
api_ok "$OTHER" records/lookup '{"records":[{"recordName":"r1"}]}'
nimbus_admin token revoke "$OTHER_ID" >/dev/null
api "$OTHER" records/lookup '{"records":[{"recordName":"r1"}]}'
expect_api_error 401 AUTHENTICATION_FAILED "a revoked token"
api "$OTHER" zones/list
expect_api_error 401 AUTHENTICATION_FAILED "a revoked token on zones/list"
api_ok "$TOK" records/lookup '{"records":[{"recordName":"r1"}]}'
ok "401: no header → AUTHENTICATION_REQUIRED; Basic, empty, malformed, unknown and revoked tokens → AUTHENTICATION_FAILED; other tokens unaffected"

note "forged and foreign sync tokens and markers"
api_ok "$TOK" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
default_token=$(json_last_field syncToken)
api_ok "$TOK" records/changes '{"zoneID":{"zoneName":"Z"}}'
z_token=$(json_last_field syncToken)
api_ok "$TOK" zones/changes '{}'
db_token=$(json_last_field syncToken)
flip() { local t=$1 c=${1:$2:1} r=A; [ "$c" = A ] && r=B; printf '%s' "${t:0:$2}$r${t:$(($2 + 1))}"; }
for token in "$(flip "$default_token" 5)" "$(flip "$default_token" 30)" "$(flip "$default_token" $((${#default_token} - 1)))" \
             "${default_token:0:20}" "${default_token}AAAA" "not a token" "$z_token" "$db_token"; do
  bad records/changes '{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"'"$token"'"}' 400 BAD_REQUEST "records/changes with token ${token:0:24}…"
done
for token in "$(flip "$db_token" 12)" "$(flip "$db_token" $((${#db_token} - 2)))" "$default_token" "!!!"; do
  bad zones/changes '{"syncToken":"'"$token"'"}' 400 BAD_REQUEST "zones/changes with token ${token:0:24}…"
done
api_ok "$TOK" records/changes '{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"'"$default_token"'"}'
api_ok "$TOK" records/modify '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"q1","recordType":"Note","fields":{"text":{"value":"a"}}}},{"operationType":"forceUpdate","record":{"recordName":"q2","recordType":"Note","fields":{"text":{"value":"b"}}}}]}'
api_ok "$TOK" records/query '{"query":{"recordType":"Note","sortBy":[{"fieldName":"text","ascending":true}]},"resultsLimit":1}'
marker=$(json_last_field continuationMarker) || fail "no continuationMarker on a page of 1"
bad records/query '{"query":{"recordType":"Note","sortBy":[{"fieldName":"text","ascending":true}]},"resultsLimit":1,"continuationMarker":"'"$(flip "$marker" 3)"'"}' 400 BAD_REQUEST "a tampered continuationMarker"
bad records/query '{"query":{"recordType":"Note","sortBy":[{"fieldName":"text","ascending":false}]},"resultsLimit":1,"continuationMarker":"'"$marker"'"}' 400 BAD_REQUEST "a continuationMarker of another order"
bad records/query '{"zoneID":{"zoneName":"Z"},"query":{"recordType":"Note","sortBy":[{"fieldName":"text","ascending":true}]},"resultsLimit":1,"continuationMarker":"'"$marker"'"}' 400 BAD_REQUEST "a continuationMarker of another zone"
ok "tampered, truncated, foreign-zone and wrong-kind tokens and markers: 400 BAD_REQUEST"

note "addresses: container, environment, database, operation, method, shape"
for case in "bad!name|development|private" "$(repeat_char c 256)|development|private" "bad%20name|development|private" \
            "iCloud.com.mirxa.AppLocker|staging|private" "iCloud.com.mirxa.AppLocker|Development|private" \
            "iCloud.com.mirxa.AppLocker|development|public" "iCloud.com.mirxa.AppLocker|development|shared" "iCloud.com.mirxa.AppLocker|development|other"; do
  IFS='|' read -r container environment database <<<"$case"
  request POST "/database/1/$container/$environment/$database/records/lookup" -H "Authorization: Bearer $TOK" --data-binary '{"records":[]}'
  expect_api_error 400 BAD_REQUEST "container ${container:0:30} / $environment / $database"
done
request POST "/database/1/$(repeat_char c 255)/development/private/records/lookup" -H "Authorization: Bearer $TOK" --data-binary '{"records":[]}'
expect_status 200 "a 255-character container"
for op in records/frobnicate foo/bar zones/create users/list records/MODIFY; do
  bad "$op" '{}' 400 BAD_REQUEST "unknown operation $op"
done
for case in "GET records/modify" "GET records/changes" "POST zones/list" "POST users/current" "PUT records/modify" "DELETE zones/list" "PATCH records/query"; do
  method=${case% *} op=${case#* }
  request "$method" "$(api_path "$op")" -H "Authorization: Bearer $TOK" --data-binary '{}'
  expect_api_error 405 BAD_REQUEST "$case"
  [ -n "$(header_value Allow)" ] || fail "$case: 405 without Allow"
done
for path in /database/1/iCloud.com.mirxa.AppLocker/development/private/records \
            /database/1/iCloud.com.mirxa.AppLocker/development/private/records/modify/extra \
            /database/2/iCloud.com.mirxa.AppLocker/development/private/records/modify \
            /database/1/iCloud.com.mirxa.AppLocker/development/records/modify /database /database/1; do
  request POST "$path" -H "Authorization: Bearer $TOK" --data-binary '{}'
  expect_api_error 404 NOT_FOUND "path $path"
done
ok "bad container / environment / database: 400; unknown operation: 400; wrong method: 405 with Allow; wrong shape: 404"

note "limits: operations per request, resultsLimit, wait, duplicate records, record size"
bad records/modify '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"d1","recordType":"Note"}},{"operationType":"forceDelete","record":{"recordName":"d1"}}]}' 400 BAD_REQUEST "two operations on one record"
bad records/modify '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"d2","recordType":"Note"}},{"operationType":"create","record":{"recordName":"d3","recordType":"Note"}},{"operationType":"create","record":{"recordName":"d2","recordType":"Note"}}]}' 400 BAD_REQUEST "two operations on one record, apart"
api_ok "$TOK" records/lookup '{"records":[{"recordName":"d1"},{"recordName":"d2"},{"recordName":"d3"}]}'
expect_item_codes "NOT_FOUND NOT_FOUND NOT_FOUND" "records of refused requests"

ops_file() { # COUNT PREFIX FILE
  local i
  { printf '{"operations":['
    for ((i = 0; i < $1; i++)); do
      [ "$i" -gt 0 ] && printf ','
      printf '{"operationType":"forceUpdate","record":{"recordName":"%s-%d","recordType":"Bulk","fields":{"n":{"value":%d}}}}' "$2" "$i" "$i"
    done
    printf ']}'; } >"$3"
}
ops_file 401 over "$TEST_TMP/401.json"
bad records/modify "@$TEST_TMP/401.json" 413 LIMIT_EXCEEDED "401 operations"
[[ $(json_field reason) == *400* ]] || fail "the 413 reason does not name the limit: $HTTP_BODY"
ops_file 400 edge "$TEST_TMP/400.json"
api_ok "$TOK" records/modify "@$TEST_TMP/400.json"
[ "$(item_codes | grep -c '^ok$')" = 400 ] || fail "400 operations: not all saved"
api_ok "$TOK" records/lookup '{"records":[{"recordName":"over-0"},{"recordName":"edge-399"}]}'
expect_item_codes "NOT_FOUND ok" "after the 401 and 400 operation requests"
{ printf '{"records":['; for ((i = 0; i < 401; i++)); do [ $i -gt 0 ] && printf ','; printf '{"recordName":"edge-%d"}' $i; done; printf ']}'; } >"$TEST_TMP/lookup401.json"
bad records/lookup "@$TEST_TMP/lookup401.json" 413 LIMIT_EXCEEDED "lookup of 401 records"

for op in records/query records/changes zones/changes; do
  case $op in
    records/query) base='"query":{"recordType":"Bulk"}' ;;
    records/changes) base='"zoneID":{"zoneName":"_defaultZone"}' ;;
    zones/changes) base='"x":0' ;;
  esac
  for limit in 0 -1 '"10"' 'null'; do
    if [ "$limit" = null ]; then api_ok "$TOK" "$op" "{$base,\"resultsLimit\":null}"; continue; fi
    bad "$op" "{$base,\"resultsLimit\":$limit}" 400 BAD_REQUEST "$op resultsLimit $limit"
  done
  api_ok "$TOK" "$op" "{$base,\"resultsLimit\":1}"
  api_ok "$TOK" "$op" "{$base,\"resultsLimit\":100000}"
done
api_ok "$TOK" records/query '{"query":{"recordType":"Bulk"},"resultsLimit":1000}'
[ "$(record_summary | wc -l)" = 400 ] || fail "resultsLimit 1000 answered $(record_summary | wc -l) records, not the cap 400"
! json_last_field continuationMarker >/dev/null || fail "all 400 Bulk records on one page, yet a continuationMarker"
api_ok "$TOK" records/changes '{"zoneID":{"zoneName":"_defaultZone"},"resultsLimit":1000}'
[ "$(record_summary | wc -l)" = 400 ] || fail "changes resultsLimit 1000 answered $(record_summary | wc -l) records, not the cap 400"
[ "$(json_last_field moreComing)" = true ] || fail "changes capped at 400 with more left but moreComing false"
ok "resultsLimit 0, -1, a string: 400; null and 1 accepted; 1000 capped at 400; 401 operations or lookups: 413; 400 saved"

for op in records/changes zones/changes; do
  base='"zoneID":{"zoneName":"_defaultZone"}'
  [ "$op" = zones/changes ] && base='"x":0'
  for wait in 56 -1 1.5 '"5"' 100000000000; do
    bad "$op" "{$base,\"wait\":$wait}" 400 BAD_REQUEST "$op wait $wait"
  done
done
# wait applies only when the answer would be empty: these answer at once, now and with long-poll.
start=$(now_ms)
api_ok "$TOK" records/changes '{"zoneID":{"zoneName":"_defaultZone"},"resultsLimit":5,"wait":55}'
[ -n "$(record_summary)" ] || fail "wait 55 without a token on a zone with records answered no records"
api_ok "$TOK" zones/changes '{"wait":55}'
elapsed=$(( $(now_ms) - start ))
[ "$elapsed" -lt 5000 ] || fail "wait 55 with changes to answer took ${elapsed} ms"
ok "wait 56, -1, 1.5, a string: 400; wait 55 accepted and answered at once when there are changes"

printf '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"huge","recordType":"Note","fields":{"text":{"value":"%s"}}}}]}' "$(many x 1100000)" >"$TEST_TMP/huge.json"
api_ok "$TOK" records/modify "@$TEST_TMP/huge.json"
expect_item_codes LIMIT_EXCEEDED "a record over 1 MiB"
expect_error_body LIMIT_EXCEEDED "$(record_items)"
ok "a record over 1 MiB: LIMIT_EXCEEDED item"

note "record-level refusals: NOT_FOUND, EXISTS, VALIDATING_REFERENCE_ERROR, ATOMIC_ERROR"
bad_item records/modify '{"operations":[{"operationType":"update","record":{"recordName":"missing","recordType":"Note","recordChangeTag":"1","fields":{"text":{"value":"x"}}}}]}' NOT_FOUND "update of a missing record"
bad_item records/modify '{"operations":[{"operationType":"delete","record":{"recordName":"missing","recordChangeTag":"1"}}]}' NOT_FOUND "delete of a missing record"
bad_item records/modify '{"operations":[{"operationType":"create","record":{"recordName":"r1","recordType":"Note","fields":{"text":{"value":"other"}}}}]}' EXISTS "create of an existing record with other content"
bad_item records/modify '{"operations":[{"operationType":"update","record":{"recordName":"r1","recordType":"Other","recordChangeTag":"'"$r1_tag"'"}}]}' BAD_REQUEST "update changing the record type"
bad_item records/modify '{"operations":[{"operationType":"create","record":{"recordName":"child","recordType":"Note","fields":{"parent":{"value":{"recordName":"nobody","action":"DELETE_SELF"},"type":"REFERENCE"}}}}]}' VALIDATING_REFERENCE_ERROR "DELETE_SELF to a missing record"
bad_item records/modify '{"operations":[{"operationType":"create","record":{"recordName":"child","recordType":"Note","fields":{"parent":{"value":{"recordName":"r1","zoneID":{"zoneName":"Z"},"action":"DELETE_SELF"},"type":"REFERENCE"}}}}]}' VALIDATING_REFERENCE_ERROR "DELETE_SELF to another zone"
api_ok "$TOK" records/modify '{"atomic":true,"operations":[{"operationType":"create","record":{"recordName":"at1","recordType":"Note","fields":{"text":{"value":"a"}}}},{"operationType":"update","record":{"recordName":"r1","recordChangeTag":"zzzz","fields":{"text":{"value":"b"}}}},{"operationType":"upsert","record":{"recordName":"at3"}}]}'
expect_item_codes "ATOMIC_ERROR CONFLICT BAD_REQUEST" "atomic request with a stale tag and a bad operation"
api_ok "$TOK" records/lookup '{"records":[{"recordName":"at1"},{"recordName":"r1"}]}'
expect_item_codes "NOT_FOUND ok" "after the failed atomic request"
[ "$(record_tag r1)" = "$r1_tag" ] || fail "the failed atomic request changed r1"
ok "NOT_FOUND, EXISTS, type change, VALIDATING_REFERENCE_ERROR and ATOMIC_ERROR items, nothing saved by a failed atomic request"

note "values PostgreSQL cannot hold as given: NUL characters, timestamps beyond its range"
# docs/api.md: 500 is never an answer to bad input. A value is either stored and returned as sent, or
# refused as BAD_REQUEST (an item in records/modify, the request in records/query).
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" >/dev/null
nul_saves=(
  'text|{"text":{"value":"a\u0000b"}}'
  'list|{"list":{"value":["a\u0000"],"type":"STRING_LIST"}}'
  'ref|{"ref":{"value":{"recordName":"a\u0000","action":"NONE"},"type":"REFERENCE"}}'
)
for case in "${nul_saves[@]}"; do
  api "$TOK" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"nul-'"${case%%|*}"'","recordType":"Note","fields":'"${case#*|}"'}}]}'
  if [ "$HTTP_STATUS" != 200 ]; then
    defer_fail "records/modify of a value with \\u0000 (${case%%|*}): status $HTTP_STATUS ${HTTP_BODY:0:200}"
  else
    code=$(item_codes)
    if [ "$code" = ok ]; then
      [[ $HTTP_BODY == *'\u0000'* ]] || defer_fail "a value with \\u0000 was stored but not returned as sent: ${HTTP_BODY:0:300}"
    elif [ "$code" != BAD_REQUEST ]; then
      defer_fail "a value with \\u0000 (${case%%|*}) answered item $code"
    fi
  fi
done
nul_filters=(
  '{"fieldName":"text","comparator":"EQUALS","fieldValue":{"value":"a\u0000b"}}'
  '{"fieldName":"text","comparator":"BEGINS_WITH","fieldValue":{"value":"\u0000"}}'
  '{"fieldName":"text","comparator":"IN","fieldValue":{"value":["a\u0000"]}}'
  '{"fieldName":"___recordID","comparator":"EQUALS","fieldValue":{"value":"a\u0000"}}'
  '{"fieldName":"___recordID","comparator":"IN","fieldValue":{"value":["r1","a\u0000"]}}'
)
for filter in "${nul_filters[@]}"; do
  api "$TOK" records/query '{"query":{"recordType":"Note","filterBy":['"$filter"']}}'
  case $HTTP_STATUS in
    200) [[ $(record_summary | cut -d' ' -f1 | tr '\n' ' ') != *r1* ]] || [[ $filter == *'"r1"'* ]] || defer_fail "filter $filter matched r1" ;;
    400) expect_error_body BAD_REQUEST ;;
    *) defer_fail "records/query with \\u0000 in $filter: status $HTTP_STATUS ${HTTP_BODY:0:200}" ;;
  esac
done
for ts in -9000000000000000 -9223372036854775808; do
  api "$TOK" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"old-'"${ts:1:4}"'","recordType":"BlockedAppEvent","fields":{"appName":{"value":"x"},"timestamp":{"value":'"$ts"'}}}}]}'
  if [ "$HTTP_STATUS" != 200 ] || ! [[ $(item_codes) =~ ^(ok|BAD_REQUEST)$ ]]; then
    defer_fail "a BlockedAppEvent (30-day retention) with timestamp $ts: status $HTTP_STATUS ${HTTP_BODY:0:200}"
  fi
done
ok "NUL characters and extreme timestamps checked (failures above are deferred)"

expect_no_server_errors
finish_scenario
