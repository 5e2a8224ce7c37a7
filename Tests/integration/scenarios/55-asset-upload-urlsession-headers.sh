#!/usr/bin/env bash
# Uploads from Apple's URLSession: on iOS 17 and later an upload task adds the resumable-upload
# draft's headers (draft-ietf-httpbis-resumable-upload) to every upload: Upload-Draft-Interop-Version
# (3 on iOS 17, 5 and 6 on iOS 18, 8 on iOS 26) with Upload-Complete: ?1 (Upload-Incomplete: ?0
# in interop version 3). Nimbus does not offer resumable uploads, so an upload carrying them must
# be answered exactly as one without: the same status and body, and no informational (1xx) answer
# before it (a server that offers resumption would send 104 first). Checked on the raw bytes, for
# an asset upload with Content-Length and chunked, and for a records/modify sent as an upload.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac-mini

# draft_headers VERSION: DRAFT := the header lines URLSession sends with interop version VERSION.
draft_headers() {
  case $1 in
    3) DRAFT=$'Upload-Draft-Interop-Version: 3\r\nUpload-Incomplete: ?0\r\n' ;;
    *) DRAFT="Upload-Draft-Interop-Version: $1"$'\r\nUpload-Complete: ?1\r\n' ;;
  esac
}

# upload_raw EXTRA FRAMING: uploads the ten bytes 0123456789 to a fresh upload URL on a raw
# connection with the header lines EXTRA; sets RAW_RESPONSE and RESP_* for the one answer.
upload_raw() {
  local extra=$1 framing=$2 body
  asset_upload_url "$MAC" Blob data
  if [ "$framing" = length ]; then
    body=$'Content-Length: 10\r\n\r\n0123456789'
  else
    body=$'Transfer-Encoding: chunked\r\n\r\n4\r\n0123\r\n6\r\n456789\r\n0\r\n\r\n'
  fi
  raw_request "POST $ASSET_URL_PATH HTTP/1.1"$'\r\n'"Host: x"$'\r\n'"Authorization: Bearer $MAC"$'\r\n'"Connection: close"$'\r\n'"Content-Type: application/octet-stream"$'\r\n'"$extra$body" 5
  parse_responses POST
}

printf 0123456789 >"$TEST_TMP/ten"
ten_checksum=$(b64_sha256 "$TEST_TMP/ten")

note "asset uploads with and without the draft's headers"
for framing in length chunked; do
  upload_raw "" "$framing"
  [ "${RESP_STATUS[0]}" = 200 ] || fail "plain upload ($framing) answered ${RESP_STATUS[0]}"
  plain_body=${RESP_BODY[0]}
  parse_upload "$plain_body"
  [ "$UP_CHECKSUM" = "$ten_checksum" ] || fail "plain upload ($framing) answered $plain_body"
  for version in 3 5 6 8; do
    draft_headers "$version"
    extra=$DRAFT
    [ "$version" -ge 6 ] && extra+=$'Upload-Length: 10\r\n'
    upload_raw "$extra" "$framing"
    statuses=$(raw_statuses)
    [ "$statuses" = 200 ] || fail "upload ($framing) with interop version $version: answers $statuses (want one 200, no 1xx)"
    parse_upload "${RESP_BODY[0]}"
    [ "$UP_CHECKSUM" = "$ten_checksum" ] && [ "$UP_SIZE" = 10 ] \
      || fail "upload ($framing) with interop version $version answered ${RESP_BODY[0]}"
    # The same bytes under the same field: the same receipt-free answer as without the headers.
    [ "$(sed 's/"receipt":"[^"]*"//' <<<"${RESP_BODY[0]}")" = "$(sed 's/"receipt":"[^"]*"//' <<<"$plain_body")" ] \
      || fail "upload ($framing) with interop version $version answered ${RESP_BODY[0]}, without the headers $plain_body"
    for header in Upload-Offset Upload-Draft-Interop-Version Location; do
      [ -z "$(header_value "$header" "${RESP_HEADERS[0]}")" ] \
        || fail "upload ($framing) with interop version $version: the answer offers resumption ($header)"
    done
  done
done
ok "asset uploads (Content-Length and chunked) with interop versions 3, 5, 6 and 8: one 200, as without"

note "a records/modify sent as an upload task"
path=$(api_path records/modify)
for version in 3 5 6 8; do
  body="{\"zoneID\":{\"zoneName\":\"_defaultZone\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"note-$version\",\"recordType\":\"Note\",\"fields\":{\"n\":{\"value\":$version}}}}]}"
  draft_headers "$version"
  raw_request "POST $path HTTP/1.1"$'\r\n'"Host: x"$'\r\n'"Authorization: Bearer $MAC"$'\r\n'"Connection: close"$'\r\n'"Content-Type: application/json"$'\r\n'"${DRAFT}Content-Length: ${#body}"$'\r\n\r\n'"$body" 5
  parse_responses POST
  [ "$(raw_statuses)" = 200 ] || fail "records/modify with interop version $version: answers $(raw_statuses); ${RESP_BODY[0]:0:300}"
  [[ ${RESP_BODY[0]} == *"\"recordName\":\"note-$version\""* ]] || fail "records/modify with interop version $version answered ${RESP_BODY[0]:0:300}"
  [[ ${RESP_BODY[0]} != *serverErrorCode* ]] || fail "records/modify with interop version $version refused: ${RESP_BODY[0]:0:300}"
done
ok "records/modify with interop versions 3, 5, 6 and 8: one 200, the record saved"

expect_no_server_errors
