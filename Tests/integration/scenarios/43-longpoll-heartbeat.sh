#!/usr/bin/env bash
# Heartbeats of waiting answers on a real socket (issue 4 item 1, docs/api.md records/changes
# `wait`): with --heartbeat-seconds 1, the headers (200, Transfer-Encoding: chunked) come at once,
# then one-byte chunks of a space about a second apart; a client that closes its connection
# mid-wait frees its waiter; an answer after heartbeats ends with the last chunk and the
# connection stays usable (keep-alive); an HTTP/1.0 waiting request gets no chunked encoding
# (close-delimited). The rules in process (heartbeat spaces, the probe on a half-close, a client
# going away, the JSON after the spaces, all three kinds of wait): Tests/NimbusAPITests/
# WaiterLifecycleTests.swift.
source "$(dirname "$0")/../lib.sh"

start_store_server --heartbeat-seconds 1
nimbus_admin user add alice >/dev/null
issue_token PHONE alice phone

api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
TOKEN=$(json_last_field syncToken)
CHANGES_BODY="{\"zoneID\":{\"zoneName\":\"_defaultZone\"},\"syncToken\":\"$TOKEN\",\"wait\":10}"

note "on the wire: headers, then a one-space chunk about every second"
raw_open
length=${#CHANGES_BODY}
raw_send "POST $(api_path records/changes) HTTP/1.1"$'\r\n'"Host: 127.0.0.1"$'\r\n'"Authorization: Bearer $PHONE"$'\r\n'"Content-Type: application/json"$'\r\n'"Content-Length: $length"$'\r\n\r\n'"$CHANGES_BODY"
start=$(now_ms)
head="" line=""
while IFS= read -r -t 2 -u "$RAW_FD" line; do
  head+=$line$'\n'
  [ "$line" = $'\r' ] && break
done
headers_ms=$(( $(now_ms) - start ))
[[ $head == 'HTTP/1.1 200'* ]] || fail "raw: no 200 status line within 2 s: '$head'"
printf '%s' "$head" | tr -d '\r' | grep -qi '^Transfer-Encoding: chunked$' || fail "raw: headers without chunked: $head"
[ "$headers_ms" -lt 500 ] || fail "raw: the headers took ${headers_ms} ms"
beats=() framing="" c=""
while [ ${#beats[@]} -lt 3 ] && IFS= read -r -N 1 -t 3 -u "$RAW_FD" c; do
  if [ "$c" = ' ' ]; then beats+=("$(( $(now_ms) - start ))"); else framing+=$c; fi
done
[ ${#beats[@]} -eq 3 ] || fail "raw: ${#beats[@]} heartbeat spaces, then silence for 3 s"
[ "$(printf '%s' "$framing" | tr -d '\r\n')" = 111 ] || fail "raw: heartbeats are not one-byte chunks: $(printf '%s' "$framing" | od -c | head -3)"
ok "raw: headers after ${headers_ms} ms; heartbeat spaces at ${beats[*]} ms"
awk -v a="${beats[0]}" -v b="${beats[1]}" -v c="${beats[2]}" -v h="$headers_ms" \
  'BEGIN {exit !(a - h >= 500 && a - h <= 1700 && b - a >= 500 && b - a <= 1700 && c - b >= 500 && c - b <= 1700)}' \
  || fail "raw: heartbeats are not about a second apart: ${beats[*]} ms (headers at ${headers_ms} ms)"
ok "raw: heartbeats come about a second apart"
wait_metric nimbus_longpoll_waiters 1 1 || fail "the raw waiter is not parked: $LP_METRIC"
raw_close
wait_metric nimbus_longpoll_waiters 0 1 || fail "a client that closed its connection mid-wait left its waiter: gauge $LP_METRIC after 1 s"
ok "closing the connection mid-wait frees the waiter within ${LP_METRIC_MS} ms"

note "an answer after heartbeats: spaces, then the JSON with the request's token; keep-alive goes on"
raw_open
body="{\"zoneID\":{\"zoneName\":\"_defaultZone\"},\"syncToken\":\"$TOKEN\",\"wait\":3}"
raw_send "POST $(api_path records/changes) HTTP/1.1"$'\r\n'"Host: 127.0.0.1"$'\r\n'"Authorization: Bearer $PHONE"$'\r\n'"Content-Type: application/json"$'\r\n'"Content-Length: ${#body}"$'\r\n\r\n'"$body"
raw_read 4.5
[ "$RAW_CLOSED" = 0 ] || fail "the server closed the connection after a waiting answer"
[[ $RAW_RESPONSE == *$'\r\n0\r\n\r\n' ]] || fail "the waiting answer does not end with the last chunk: $(printf '%s' "$RAW_RESPONSE" | tail -c 200 | od -c | tail -5)"
# De-chunk: drop the header section, then each `size CRLF` line and the CRLF after each chunk.
payload=$(printf '%s' "${RAW_RESPONSE#*$'\r\n\r\n'}" | tr -d '\r' | awk 'NR % 2 == 0' | tr -d '\n')
[[ $payload =~ ^(\ +)(\{.*\})$ ]] || fail "the de-chunked body is not spaces then JSON: '$payload'"
nspaces=${#BASH_REMATCH[1]} json=${BASH_REMATCH[2]}
[ "$nspaces" -ge 2 ] || fail "only $nspaces heartbeat spaces in a wait of 3 s at 1 s"
[ "$(json_last_field syncToken "$json")" = "$TOKEN" ] && [[ $json == *'"records":[]'* ]] || fail "the answer after heartbeats: $json"
ok "a wait of 3 s: $nspaces spaces, then an empty answer with the request's token"
raw_send "GET /limits HTTP/1.1"$'\r\n'"Host: 127.0.0.1"$'\r\n\r\n'
: >"$RAW_OUT"
raw_read 1
[ "$(raw_statuses)" = 200 ] || fail "the connection is not usable after a waiting answer: '${RAW_RESPONSE:0:200}'"
raw_close
ok "the same connection answers the next request"

note "an HTTP/1.0 waiting request: no chunked encoding; heartbeats, JSON, then the server closes"
body="{\"zoneID\":{\"zoneName\":\"_defaultZone\"},\"syncToken\":\"$TOKEN\",\"wait\":3}"
raw_request "POST $(api_path records/changes) HTTP/1.0"$'\r\n'"Authorization: Bearer $PHONE"$'\r\n'"Content-Type: application/json"$'\r\n'"Content-Length: ${#body}"$'\r\n\r\n'"$body" 6
head=$(printf '%s' "${RAW_RESPONSE%%$'\r\n\r\n'*}" | tr -d '\r')
[[ $head == 'HTTP/1.'?' 200'* ]] || fail "HTTP/1.0 waiting request: $head"
[ -z "$(header_value Transfer-Encoding "$head")" ] || fail "chunked encoding sent to an HTTP/1.0 client: $head"
[ "$RAW_CLOSED" = 1 ] || fail "the answer to an HTTP/1.0 waiting request was not ended by closing the connection"
payload=${RAW_RESPONSE#*$'\r\n\r\n'}
[[ $payload =~ ^(\ +)(\{.*\})$ ]] && [ "$(json_last_field syncToken "${BASH_REMATCH[2]}")" = "$TOKEN" ] \
  || fail "HTTP/1.0 waiting answer body: '${payload:0:300}'"
ok "HTTP/1.0: ${#BASH_REMATCH[1]} heartbeat spaces and the empty answer, close-delimited"

wait_metric nimbus_longpoll_waiters 0 2 || fail "waiters left at the end: $LP_METRIC"
expect_no_server_errors
