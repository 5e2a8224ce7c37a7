#!/usr/bin/env bash
# Assets (issue 5) on the wire: HEAD (and HEAD with Range) pipelined with another request sends no
# body bytes; a 304 carries no Content-Length but the asset's (RFC 9110 §8.6); a download cut off
# by its client leaves the server healthy. Range, If-Range and If-None-Match themselves (206 with
# exactly the bytes across the 256 KiB chunks, 416 with `Content-Range: bytes */N`, several ranges
# or unreadable syntax get the whole body, 304 for the ETag): Tests/NimbusAPITests/AssetRangeTests.swift.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac-mini

N=3000000
random_file "$TEST_TMP/big" $N
ops=""
for name in big; do
  upload_asset "$MAC" "$TEST_TMP/$name"
  ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"$name\",\"recordType\":\"Blob\",\"fields\":{\"data\":$UP_FIELD}}}"
done
api_ok "$MAC" records/modify "{\"operations\":[$ops]}"
expect_item_codes "ok" "records"
BIG_URL=$(asset_member big data downloadURL)
BIG_TAG="\"$(asset_member big data fileChecksum)\""

# MARK: HEAD

note "HEAD: pipelined with GET /healthz on one connection, so that body bytes after the head would show"
path=${BIG_URL#"$NIMBUS_URL"}
raw_request "HEAD $path HTTP/1.1"$'\r\n'"Host: x"$'\r\n'"Authorization: Bearer $MAC"$'\r\n\r\n'"HEAD $path HTTP/1.1"$'\r\n'"Host: x"$'\r\n'"Authorization: Bearer $MAC"$'\r\n'"Range: bytes=10-19"$'\r\n\r\n'"GET /healthz HTTP/1.1"$'\r\n'"Host: x"$'\r\n'"Connection: close"$'\r\n\r\n' 5
parse_responses HEAD HEAD GET
[ "${RESP_STATUS[*]}" = "200 206 200" ] || fail "HEAD, HEAD with Range, GET /healthz answered ${RESP_STATUS[*]}"
[ "$(header_value Content-Length "${RESP_HEADERS[0]}")" = $N ] || fail "HEAD: Content-Length $(header_value Content-Length "${RESP_HEADERS[0]}"), not $N"
[ "$(header_value ETag "${RESP_HEADERS[0]}")" = "$BIG_TAG" ] || fail "HEAD: ETag $(header_value ETag "${RESP_HEADERS[0]}")"
[ "$(header_value Content-Length "${RESP_HEADERS[1]}")" = 10 ] || fail "HEAD with Range: Content-Length $(header_value Content-Length "${RESP_HEADERS[1]}")"
[ "$(header_value Content-Range "${RESP_HEADERS[1]}")" = "bytes 10-19/$N" ] || fail "HEAD with Range: Content-Range $(header_value Content-Range "${RESP_HEADERS[1]}")"
ok "HEAD: 200 with Content-Length $N and the ETag, HEAD with Range 206 with its Content-Range; no body bytes on the wire"

# RFC 9110 §8.6: a 304 may carry Content-Length only with the length a 200 would have.
raw_request "GET $path HTTP/1.1"$'\r\n'"Host: x"$'\r\n'"Authorization: Bearer $MAC"$'\r\n'"If-None-Match: $BIG_TAG"$'\r\n'"Connection: close"$'\r\n\r\n' 5
[ "$(raw_statuses)" = 304 ] || fail "raw GET with If-None-Match answered $(raw_statuses)"
length=$(header_value Content-Length "$(printf '%s' "$RAW_RESPONSE" | sed '/^\r*$/q')")
if [ -z "$length" ] || [ "$length" = $N ]; then
  ok "the 304 carries no Content-Length (or the asset's)"
else
  defer_fail "the 304 for a $N-byte asset carries Content-Length: $length (RFC 9110 §8.6: only the length a 200 would have)"
fi

note "a download cut off by the client"
# A reader with a small receive buffer takes 300 KB slowly and then closes with the rest unread, so
# the server is cut mid-body whatever the machine's load (curl --limit-rate once read all 3 MB
# within a second under load, and the test then cut nothing).
cut_read=$(timeout 30 python3 - "$NIMBUS_PORT" "${BIG_URL#"$NIMBUS_URL"}" "$MAC" <<'PY'
import socket, sys, time
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
sock.connect(("127.0.0.1", int(sys.argv[1])))
sock.sendall(f"GET {sys.argv[2]} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {sys.argv[3]}\r\n\r\n".encode())
got = 0
while got < 300_000:
    data = sock.recv(16384)
    if not data:
        break
    got += len(data)
    time.sleep(0.01)
sock.close()
print(got)
PY
) || fail "the slow reader failed: ${cut_read:-no output}"
[ "$cut_read" -ge 300000 ] && [ "$cut_read" -lt 3000000 ] || fail "the slow reader read $cut_read bytes of a 3 MB download (want a cut between 300 KB and the end)"
healthy "after a cut download"
wait_open_transactions 0 5 || fail "$OPEN_TX database sessions inside a transaction after the cut download"
asset_get "$MAC" "$BIG_URL" "$TEST_TMP/after-cut"
expect_status 200 "download after the cut one"
expect_same_file "$TEST_TMP/big" "$TEST_TMP/after-cut" "download after the cut one"
ok "a download cut mid-body leaves the server healthy; the next download is whole"

expect_no_server_errors
finish_scenario
