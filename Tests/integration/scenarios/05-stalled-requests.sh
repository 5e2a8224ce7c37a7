#!/usr/bin/env bash
# Requests that stop sending: a partial head gets 408 after --header-timeout-seconds (also when it
# trickles in, slow-loris style), a partial body 408 after --body-timeout-seconds, and an idle
# keep-alive connection is closed after --keep-alive-timeout-seconds without an answer; a body
# trickling in below --min-body-bytes-per-second gets 408 although no gap reaches the body timeout.
source "$(dirname "$0")/../lib.sh"

start_nimbus --header-timeout-seconds 2 --body-timeout-seconds 2 --keep-alive-timeout-seconds 2 --min-body-bytes-per-second 100

# expect_elapsed WHAT MIN_MS MAX_MS MS
expect_elapsed() {
  [ "$4" -ge "$2" ] && [ "$4" -le "$3" ] || fail "$1 after ${4} ms, expected between $2 and $3 ms"
}

# trickle COUNT FORMAT LAST_WAIT: on the open raw connection, sends printf FORMAT (given the piece's
# number) every 0.5 s, at most COUNT times, until the server closes; then waits up to LAST_WAIT s
# for its answer, and closes.
trickle() {
  local i piece
  for ((i = 1; i <= $1; i++)); do
    printf -v piece "$2" "$i"
    raw_send "$piece"
    raw_read 0.5
    [ "$RAW_CLOSED" = 1 ] && break
  done
  [ "$RAW_CLOSED" = 1 ] || raw_read "$3"
  raw_close
}

note "partial head, then silence"
raw_open
raw_send $'GET /limits HTTP/1.1\r\nHost: x\r\nX-Partial: y'
raw_read 6
raw_close
expect_raw_error 408 BAD_REQUEST "partial head"
expect_elapsed "408 for a partial head" 1500 3500 "$RAW_ELAPSED_MS"
ok "partial head: 408 JSON and closed after ${RAW_ELAPSED_MS} ms"

note "a head trickling in one line every 0.5 s (the timer is not reset by progress)"
raw_open
start=$(now_ms)
raw_send $'GET /limits HTTP/1.1\r\nHost: x\r\n'
trickle 12 'X-Trickle-%d: v\r\n' 2
elapsed=$(( $(now_ms) - start ))
expect_raw_error 408 BAD_REQUEST "trickled head"
expect_elapsed "408 for a trickled head" 1500 3500 "$elapsed"
ok "trickled head: 408 after ${elapsed} ms despite steady progress"

note "partial body, then silence"
raw_open
raw_send $'POST /limits HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789'
raw_read 6
raw_close
expect_raw_error 408 BAD_REQUEST "partial body"
expect_elapsed "408 for a partial body" 1500 3500 "$RAW_ELAPSED_MS"
ok "partial body: 408 JSON and closed after ${RAW_ELAPSED_MS} ms"

note "a body trickling in at 20 B/s, below --min-body-bytes-per-second 100 (gaps of 0.5 s < the 2 s body timeout)"
raw_open
start=$(now_ms)
raw_send $'POST /limits HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n'
trickle 16 '0123456789' 3
elapsed=$(( $(now_ms) - start ))
expect_raw_error 408 BAD_REQUEST "slow body"
grep -q 'slower than 100 bytes per second' <<<"$RAW_RESPONSE" || fail "the slow body's 408 does not name the minimum rate: $(head -c 300 <<<"$RAW_RESPONSE")"
# 2 s + received/100: the budget runs out at ~2.5 s; the body timeout alone would never fire.
expect_elapsed "408 for a slow body" 2000 4500 "$elapsed"
ok "slow body: 408 after ${elapsed} ms (the idle body timeout never ran out)"

note "partial chunked body, then silence"
raw_open
raw_send $'POST /limits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel'
raw_read 6
raw_close
expect_raw_error 408 BAD_REQUEST "partial chunked body"
expect_elapsed "408 for a partial chunked body" 1500 3500 "$RAW_ELAPSED_MS"
ok "partial chunked body: 408 after ${RAW_ELAPSED_MS} ms"

note "idle keep-alive connection after an answer"
raw_open
raw_send $'GET /limits HTTP/1.1\r\nHost: x\r\n\r\n'
raw_read 6
raw_close
[ "$RAW_CLOSED" = 1 ] || fail "idle keep-alive connection still open after 6 s"
parse_responses GET
[ "${RESP_STATUS[*]}" = 200 ] || fail "idle keep-alive: expected only the 200, got ${RESP_STATUS[*]}"
expect_elapsed "idle keep-alive close" 1500 3500 "$RAW_ELAPSED_MS"
ok "idle keep-alive connection closed after ${RAW_ELAPSED_MS} ms with no further answer"

note "a connection that never sends a byte"
raw_open
raw_read 6
raw_close
[ "$RAW_CLOSED" = 1 ] || fail "silent connection still open after 6 s"
[ -z "$RAW_RESPONSE" ] || fail "silent connection got an answer: ${RAW_RESPONSE:0:200}"
expect_elapsed "silent connection close" 1500 3500 "$RAW_ELAPSED_MS"
ok "silent connection closed after ${RAW_ELAPSED_MS} ms without an answer"

note "the keep-alive timer restarts after each answer"
raw_open
raw_send $'GET /limits HTTP/1.1\r\nHost: x\r\n\r\n'
raw_read 1.2
raw_send $'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
raw_read 1.2
raw_send $'GET /limits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
raw_read 3
raw_close
parse_responses GET GET GET
[ "${RESP_STATUS[*]}" = "200 200 200" ] || fail "requests 1.2 s apart: ${RESP_STATUS[*]}"
ok "requests 1.2 s apart on one connection: the keep-alive timer restarts after each answer"

stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"
