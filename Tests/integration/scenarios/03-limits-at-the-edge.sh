#!/usr/bin/env bash
# Every HTTP limit over a real socket: a request of exactly N is served, N+1 is refused with its
# status (414, 431, 413) in the JSON error shape, the reason names the limit, and the connection
# closes. Small limits are configured so the requests stay small.
source "$(dirname "$0")/../lib.sh"

# Request line: "GET /limits?p=xxx HTTP/1.1" is 6 + len(target) + 9 bytes (no CRLF).
# request_line_of LENGTH: a request line of exactly LENGTH bytes.
request_line_of() {
  local target_length=$(( $1 - 13 ))
  printf 'GET /limits?p=%s HTTP/1.1' "$(repeat_char a $(( target_length - 10 )))"
}

# accepted WHAT REQUEST: the raw request is served with 200.
accepted() {
  raw_request "$2"
  [ "$(raw_statuses)" = 200 ] || fail "$1: expected 200, got '$(raw_statuses)': ${RAW_RESPONSE:0:300}"
  ok "$1: 200"
}

# refused WHAT STATUS CODE LIMIT REQUEST: refused with STATUS/CODE, reason naming LIMIT, closed.
refused() {
  raw_request "$5"
  expect_raw_error "$2" "$3" "$1"
  local reason
  reason=$(json_field reason "$(raw_body)")
  [[ $reason == *"$4"* ]] || fail "$1: reason '$reason' does not name the limit $4"
  ok "$1: $2 $3 ($reason)"
}

start_nimbus --max-request-line-bytes 200 --max-header-line-bytes 300 --max-header-bytes 1000 \
  --max-header-count 10 --max-request-bytes 1000

request GET /limits
expect_json_field maxRequestLineBytes 200
expect_json_field maxHeaderCount 10

close=$'Host: x\r\nConnection: close\r\n'   # 9 + 19 = 28 header bytes, 2 fields

note "request line (--max-request-line-bytes 200)"
line=$(request_line_of 200); [ ${#line} -eq 200 ] || fail "helper built a ${#line}-byte line"
accepted "request line of 200 bytes" "$line"$'\r\n'"$close"$'\r\n'
refused "request line of 201 bytes" 414 BAD_REQUEST 200 "$(request_line_of 201)"$'\r\n'"$close"$'\r\n'
# Refused before its end arrives: the server must not wait for a line that is already too long.
raw_open
raw_send "GET /limits?p=$(repeat_char a 400)"
raw_read 3
raw_close
expect_raw_error 414 BAD_REQUEST "unterminated 414-byte request line"
ok "an unterminated over-long request line is refused at once"

note "one header line (--max-header-line-bytes 300)"
pad300="X-Pad: $(repeat_char b 293)"   # 7 + 293 = 300 bytes
accepted "header line of 300 bytes" $'GET /limits HTTP/1.1\r\n'"$close$pad300"$'\r\n\r\n'
refused "header line of 301 bytes" 431 BAD_REQUEST 300 $'GET /limits HTTP/1.1\r\n'"$close${pad300}b"$'\r\n\r\n'

note "all header lines (--max-header-bytes 1000, each line counted with its CRLF)"
# 28 bytes of Host and Connection, then 4 lines of (content + 2): 250 + 250 + 250 + 222 = 972.
fill=""
for length in 248 248 248; do fill+="X-F$((${#fill} % 7)): $(repeat_char c $(( length - 6 )))"$'\r\n'; done
header_section_of() { printf '%s%sX-Last: %s\r\n' "$close" "$fill" "$(repeat_char d $(( $1 - 28 - 750 - 2 - 8 )))"; }
section=$(header_section_of 1000; printf x); section=${section%x}
[ ${#section} -eq 1000 ] || fail "helper built a ${#section}-byte header section"
accepted "header section of 1000 bytes (6 fields)" $'GET /limits HTTP/1.1\r\n'"$section"$'\r\n'
section=$(header_section_of 1001; printf x); section=${section%x}
refused "header section of 1001 bytes" 431 BAD_REQUEST 1000 $'GET /limits HTTP/1.1\r\n'"$section"$'\r\n'

note "header count (--max-header-count 10)"
fields=""; for i in 1 2 3 4 5 6 7 8; do fields+="X-N$i: v"$'\r\n'; done
accepted "10 header fields" $'GET /limits HTTP/1.1\r\n'"$close$fields"$'\r\n'
refused "11 header fields" 431 BAD_REQUEST 10 $'GET /limits HTTP/1.1\r\n'"$close${fields}X-N9: v"$'\r\n\r\n'

note "body (--max-request-bytes 1000): accepted means read, then 405 from POST /limits"
body1000=$(repeat_char e 1000)
raw_request $'POST /limits HTTP/1.1\r\n'"$close"$'Content-Length: 1000\r\n\r\n'"$body1000"
[ "$(raw_statuses)" = 405 ] || fail "Content-Length 1000: expected 405 after the body, got '$(raw_statuses)': ${RAW_RESPONSE:0:300}"
ok "Content-Length body of 1000 bytes: read, 405"
refused "Content-Length 1001" 413 LIMIT_EXCEEDED 1000 $'POST /limits HTTP/1.1\r\n'"$close"$'Content-Length: 1001\r\n\r\n'
# chunked: 600 + 400 = 1000 decoded bytes pass; 600 + 401 do not.
# (printf -v: a $(...) would strip the final CRLF CRLF.)
chunked_body() { printf -v CHUNKED '258\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n' "$(repeat_char f 600)" "$1" "$(repeat_char g "$1")"; }
chunked_body 400
raw_request $'POST /limits HTTP/1.1\r\n'"$close"$'Transfer-Encoding: chunked\r\n\r\n'"$CHUNKED"
[ "$(raw_statuses)" = 405 ] || fail "chunked 1000: expected 405 after the body, got '$(raw_statuses)': ${RAW_RESPONSE:0:300}"
ok "chunked body of 1000 bytes: read, 405"
chunked_body 401
refused "chunked body of 1001 bytes" 413 LIMIT_EXCEEDED 1000 \
  $'POST /limits HTTP/1.1\r\n'"$close"$'Transfer-Encoding: chunked\r\n\r\n'"$CHUNKED"
# With curl as the client too.
head -c 1000 /dev/zero | tr '\0' h >"$TEST_TMP/body-1000"
request POST /limits -H 'Expect:' --data-binary @"$TEST_TMP/body-1000"
expect_status 405 "curl POST of 1000 bytes"
request POST /limits -H 'Expect:' -H 'Transfer-Encoding: chunked' --data-binary @"$TEST_TMP/body-1000"
expect_status 405 "curl chunked POST of 1000 bytes"
ok "curl bodies of exactly 1000 bytes (plain and chunked) are accepted"

stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"

note "default request-line limit (8192)"
start_nimbus
accepted "request line of 8192 bytes (default limit)" "$(request_line_of 8192)"$'\r\n'"$close"$'\r\n'
refused "request line of 8193 bytes (default limit)" 414 BAD_REQUEST 8192 "$(request_line_of 8193)"$'\r\n'"$close"$'\r\n'
stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"
