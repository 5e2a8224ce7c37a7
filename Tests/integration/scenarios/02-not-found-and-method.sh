#!/usr/bin/env bash
# Unknown paths answer 404 NOT_FOUND and wrong methods 405 BAD_REQUEST with Allow, both in the
# docs/api.md error shape; HEAD answers like GET without a body.
source "$(dirname "$0")/../lib.sh"

start_nimbus

note "404 for unknown paths"
request GET /nope
expect_status 404 "GET /nope"
expect_error_body NOT_FOUND
[[ $(header_value Content-Type) == application/json* ]] || fail "404 is not JSON"
first_uuid=$(json_field uuid)
request GET '/limits/extra?x=1'
expect_status 404 "GET /limits/extra"
expect_error_body NOT_FOUND
[ "$(json_field uuid)" != "$first_uuid" ] || fail "two errors carry the same uuid $first_uuid"
request POST /nope -H 'Content-Type: application/json' --data-binary '{}'
expect_status 404 "POST /nope"
expect_error_body NOT_FOUND
request HEAD /nope
expect_status 404 "HEAD /nope"
ok "unknown paths: 404 NOT_FOUND with uuid and reason, a new uuid each time"

note "405 for wrong methods, with Allow"
for case in "POST /limits" "DELETE /healthz" "PUT /metrics" "PATCH /limits"; do
  method=${case% *} path=${case#* }
  request "$method" "$path"
  expect_status 405 "$case"
  expect_error_body BAD_REQUEST
  allow=$(header_value Allow)
  [ -n "$allow" ] || fail "$case: 405 without an Allow header"
  [[ ",$allow," =~ ,\ ?GET, ]] || fail "$case: Allow '$allow' lacks GET"
  [[ ",$allow," =~ ,\ ?HEAD, ]] || fail "$case: Allow '$allow' lacks HEAD"
  [[ $allow != *"$method"* ]] || fail "$case: Allow '$allow' lists the refused method"
done
ok "wrong methods: 405 BAD_REQUEST with Allow: $allow"

note "HEAD is GET without a body"
request GET /limits
expect_status 200 "GET /limits"
get_length=$(header_value Content-Length)
[ "$get_length" = "${#HTTP_BODY}" ] || fail "GET /limits Content-Length $get_length but body of ${#HTTP_BODY} bytes"
request HEAD /limits
expect_status 200 "HEAD /limits"
[ "$(header_value Content-Length)" = "$get_length" ] || fail "HEAD /limits Content-Length $(header_value Content-Length), GET had $get_length"
[[ $(header_value Content-Type) == application/json* ]] || fail "HEAD /limits lacks the GET Content-Type"
# curl --head would hide a body, so look at the bytes: a HEAD answer, then the next answer at once.
raw_request $'HEAD /limits HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
parse_responses HEAD GET
[ "${RESP_STATUS[*]}" = "200 404" ] || fail "HEAD then GET answered ${RESP_STATUS[*]}"
[ "$(header_value Content-Length "${RESP_HEADERS[0]}")" = "$get_length" ] || fail "raw HEAD Content-Length differs from GET's $get_length"
expect_error_body NOT_FOUND "${RESP_BODY[1]}"
ok "HEAD /limits: Content-Length $get_length as GET, no body bytes"

raw_request $'HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
parse_responses HEAD
[ "${RESP_STATUS[0]}" = 200 ] || fail "HEAD /healthz answered ${RESP_STATUS[0]}"
[ "$(header_value Content-Length "${RESP_HEADERS[0]}")" -gt 0 ] || fail "HEAD /healthz has no Content-Length of the GET body"
ok "HEAD /healthz: 200, no body"

note "made-up methods are counted as one 'other' series"
request GET /metrics
before=${#HTTP_BODY}
# 300 requests with invented methods, on one connection (curl reuses it across --next).
urls=()
for index in $(seq 1 300); do urls+=(--next -sS -X "BREW$index" -o /dev/null "$NIMBUS_URL/nope$index"); done
curl --max-time 30 "${urls[@]:1}" || true
request GET /metrics
[[ $HTTP_BODY != *BREW* ]] || fail "/metrics names a made-up method: $(grep -m1 BREW <<<"$HTTP_BODY")"
grep -q 'route="(unrouted)",method="other",status="404"} [1-9]' <<<"$HTTP_BODY" \
  || fail "/metrics has no method=\"other\" series for the made-up methods"
(( ${#HTTP_BODY} - before < 4000 )) || fail "/metrics grew from $before to ${#HTTP_BODY} bytes for 300 made-up methods"
ok "300 made-up methods: one method=\"other\" series, /metrics $before -> ${#HTTP_BODY} bytes"

stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"
