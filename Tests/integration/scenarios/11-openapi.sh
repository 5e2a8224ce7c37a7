#!/usr/bin/env bash
# GET /openapi.json serves the embedded OpenAPI 3.1 document without auth; every method an
# operation does not take answers 405 with that operation's own Allow (what the document says).
source "$(dirname "$0")/../lib.sh"

start_nimbus

request GET /openapi.json
expect_status 200 "GET /openapi.json"
[[ $(header_value Content-Type) == application/json* ]] || fail "/openapi.json is not application/json: $(header_value Content-Type)"
expect_json_field openapi 3.1.0
contains "$HTTP_BODY" -q '"/database/1/{container}/{environment}/{database}/records/modify"' || fail "the document lacks records/modify"
contains "$HTTP_BODY" -q '"bearerAuth"' || fail "the document lacks the bearer security scheme"
length=$(header_value Content-Length)
request HEAD /openapi.json
expect_status 200 "HEAD /openapi.json"
[ "$(header_value Content-Length)" = "$length" ] || fail "HEAD /openapi.json Content-Length differs from GET's $length"
ok "GET /openapi.json: 200 application/json, OpenAPI 3.1.0, $length bytes, no token needed"

base=/database/1/iCloud.com.mirxa.AppLocker/development/private
for case in "OPTIONS records/modify POST" "DELETE records/lookup POST" "GET records/query POST" "PUT zones/list GET, HEAD" \
            "POST users/current GET, HEAD" "PATCH tokens/create POST" "OPTIONS subscriptions/list GET, HEAD"; do
  read -r method operation allowed <<<"$case"
  request "$method" "$base/$operation"
  expect_api_error 405 BAD_REQUEST "$method $operation"
  [ "$(header_value Allow)" = "$allowed" ] || fail "$method $operation: Allow '$(header_value Allow)', expected '$allowed'"
done
ok "wrong methods on database operations: 405 with the operation's own Allow"
