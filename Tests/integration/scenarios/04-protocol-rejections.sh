#!/usr/bin/env bash
# Malformed and smuggling-shaped requests over a raw socket: each gets one JSON error answer
# (400, 501 or 505, code BAD_REQUEST) with Connection: close, and the server closes the
# connection, so nothing sent after the fault is ever read as a request. An HTTP/1.0 request
# without Host is served.
source "$(dirname "$0")/../lib.sh"

start_nimbus

# rejected WHAT STATUS BYTES: one error answer, closed; a request pipelined behind it is not served.
rejected() {
  raw_request "$3"$'GET /limits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
  expect_raw_error "$2" BAD_REQUEST "$1"
  ok "$1: $2 ($(json_field reason "$(raw_body)"))"
}

rejected "Content-Length with Transfer-Encoding" 400 \
  $'POST /limits HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
rejected "Transfer-Encoding with Content-Length" 400 \
  $'POST /limits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n'
rejected "two differing Content-Length fields" 400 \
  $'POST /limits HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!'
rejected "a Content-Length list that differs" 400 \
  $'POST /limits HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\nhello!'
rejected "a signed Content-Length" 400 \
  $'POST /limits HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello'
rejected "Transfer-Encoding: gzip" 501 \
  $'POST /limits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n'
rejected "Transfer-Encoding: gzip, chunked" 501 \
  $'POST /limits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n'
rejected "HTTP/2.0 version" 505 \
  $'GET /limits HTTP/2.0\r\nHost: x\r\n\r\n'
rejected "obs-fold continuation line" 400 \
  $'GET /limits HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n  b\r\n\r\n'
rejected "bare LF line ends" 400 \
  $'GET /limits HTTP/1.1\nHost: x\n\n'
rejected "bare LF after a CRLF request line" 400 \
  $'GET /limits HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n'
rejected "control character in a header value" 400 \
  $'GET /limits HTTP/1.1\r\nHost: x\r\nX-Ctl: a\x01b\r\n\r\n'
rejected "bare CR in a header value" 400 \
  $'GET /limits HTTP/1.1\r\nHost: x\r\nX-Cr: a\rb\r\n\r\n'
rejected "space before the colon" 400 \
  $'GET /limits HTTP/1.1\r\nHost: x\r\nX-Space : v\r\n\r\n'
rejected "HTTP/1.1 without Host" 400 \
  $'GET /limits HTTP/1.1\r\nX-A: b\r\n\r\n'
rejected "two Host fields" 400 \
  $'GET /limits HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n'
rejected "bad chunk size" 400 \
  $'POST /limits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n'
rejected "chunk data longer than its size" 400 \
  $'POST /limits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n'
rejected "garbage request line" 400 \
  $'HELLO\r\n\r\n'

note "HTTP/1.0 without Host is served, and closed after the answer"
raw_request $'GET /limits HTTP/1.0\r\n\r\n'
parse_responses GET
[ "${RESP_STATUS[0]}" = 200 ] || fail "HTTP/1.0 without Host answered ${RESP_STATUS[0]}"
[[ ${RESP_HEADERS[0]} == HTTP/1.0\ 200* || ${RESP_HEADERS[0]} == HTTP/1.1\ 200* ]] || fail "odd status line: ${RESP_HEADERS[0]%%$'\n'*}"
expect_json_field maxRequestBytes 8388608 "${RESP_BODY[0]}"
[ "$RAW_CLOSED" = 1 ] || fail "HTTP/1.0 request without keep-alive: the connection stayed open"
ok "HTTP/1.0 without Host: 200 with the /limits body, connection closed"

note "the server still serves normally afterwards"
request GET /healthz
expect_status 200 "GET /healthz after the rejections"
ok "still healthy"

stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"
