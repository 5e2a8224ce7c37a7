#!/usr/bin/env bash
# One connection carries 1,000 sequential requests; pipelined requests are answered in order
# (a slow database-backed answer first must not be overtaken); Expect: 100-continue gets the
# interim answer only when the body will be read; chunked bodies leave the connection usable.
source "$(dirname "$0")/../lib.sh"

start_nimbus

note "1,000 sequential requests on one keep-alive connection"
config="$TEST_TMP/curl-1000.conf"
: >"$config"
for i in $(seq 1 1000); do
  printf 'url = "%s/limits?i=%d"\noutput = "/dev/null"\n' "$NIMBUS_URL" "$i" >>"$config"
done
curl -sS --max-time 120 -K "$config" -w '%{http_code} %{num_connects}\n' >"$TEST_TMP/curl-1000.out" \
  || fail "curl over 1,000 URLs failed: $(tail -n 3 "$TEST_TMP/curl-1000.out")"
answers=$(wc -l <"$TEST_TMP/curl-1000.out")
ok_count=$(grep -c '^200 ' "$TEST_TMP/curl-1000.out")
connects=0
while read -r _ n; do connects=$(( connects + n )); done <"$TEST_TMP/curl-1000.out"
[ "$answers" -eq 1000 ] || fail "curl reported $answers answers, expected 1000"
[ "$ok_count" -eq 1000 ] || fail "only $ok_count of 1000 answers were 200: $(grep -v '^200 ' "$TEST_TMP/curl-1000.out" | sort | uniq -c)"
[ "$connects" -eq 1 ] || fail "1000 requests needed $connects connections, expected 1 (keep-alive)"
request GET /metrics
count=$(printf '%s\n' "$HTTP_BODY" | grep -F 'nimbus_http_requests_total{route="/limits",method="GET",status="200"} ' | sed 's/.* //')
[ "${count%.0}" = 1000 ] || fail "/metrics counts ${count:-no} GET /limits 200s, expected 1000"
ok "1000 × 200 over 1 connection, and /metrics counted 1000"

note "pipelined requests in one write are answered in order"
raw_request $'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /limits HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\nHEAD /limits HTTP/1.1\r\nHost: x\r\n\r\nPOST /limits HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' 5
parse_responses GET GET GET HEAD POST GET
[ "${RESP_STATUS[*]}" = "200 200 404 200 405 200" ] || fail "pipelined answers: ${RESP_STATUS[*]}"
expect_json_field status ok "${RESP_BODY[0]}"
expect_json_field maxRequestBytes 8388608 "${RESP_BODY[1]}"
expect_error_body NOT_FOUND "${RESP_BODY[2]}"
expect_error_body BAD_REQUEST "${RESP_BODY[4]}"
[[ ${RESP_BODY[5]} == *nimbus_http_requests_total* ]] || fail "6th pipelined answer is not /metrics: ${RESP_BODY[5]:0:200}"
[ "$RAW_CLOSED" = 1 ] || fail "connection stayed open after Connection: close"
ok "6 pipelined requests: 200 200 404 200(HEAD) 405 200 in order, then closed"

note "pipelined requests sent one byte-burst at a time"
raw_open
for part in $'GET /healthz HTTP/1.1\r\nHo' $'st: x\r\n\r\nGET /lim' $'its HTTP/1.1\r\nHost: x\r' $'\nConnection: close\r\n\r\n'; do
  raw_send "$part"
  sleep 0.1
done
raw_read 5
raw_close
parse_responses GET GET
[ "${RESP_STATUS[*]}" = "200 200" ] || fail "split pipelined requests: ${RESP_STATUS[*]}"
ok "requests split at arbitrary points: 200 200"

note "Expect: 100-continue"
raw_open
raw_send $'POST /limits HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n'
raw_read 1
[[ $RAW_RESPONSE == $'HTTP/1.1 100 Continue\r\n\r\n' ]] \
  || fail "expected exactly 'HTTP/1.1 100 Continue' before the body, got: '${RAW_RESPONSE:0:200}'"
raw_send 'hello'
raw_read 1
raw_send $'GET /limits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
raw_read 3
raw_close
parse_responses POST GET
[ "${RESP_STATUS[*]}" = "100 405 200" ] || fail "100-continue exchange: ${RESP_STATUS[*]}"
ok "100 Continue, then 405 once the body came, then the connection served another request"

raw_open
raw_send $'POST /limits HTTP/1.1\r\nHost: x\r\nContent-Length: 9000000\r\nExpect: 100-continue\r\n\r\n'
raw_read 3
raw_close
expect_raw_error 413 LIMIT_EXCEEDED "100-continue with a body over the limit"
ok "100-continue with Content-Length over the limit: 413 at once, no 100 Continue"

note "chunked request bodies keep the connection usable"
raw_request $'POST /limits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\nPOST /limits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /limits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' 5
parse_responses POST POST GET
[ "${RESP_STATUS[*]}" = "405 405 200" ] || fail "chunked bodies then GET: ${RESP_STATUS[*]}"
expect_json_field maxHeaderCount 100 "${RESP_BODY[2]}"
ok "chunked body with extension and trailer, empty chunked body, then GET: 405 405 200"

stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"
