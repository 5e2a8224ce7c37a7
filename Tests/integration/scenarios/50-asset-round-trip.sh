#!/usr/bin/env bash
# Assets over the wire (issue 5): a round trip of 50 MiB of random bytes, uploaded with
# Content-Length and with chunked encoding; fileChecksum checked against sha256sum; the bytes saved
# in records, fetched by another device of the user through downloadURL and compared byte for byte
# (ETag, Content-Length); the same bytes again with the other framing answer the same checksum and
# are stored once; an upload and the next request on one keep-alive connection. The rules in
# process (sizes around the 256 KiB chunk, the empty asset, dedup, the saved record's members, the
# download): Tests/NimbusAPITests/AssetTests.swift.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac-mini
issue_token PHONE alice iphone

sizes=(52428800)
declare -A CHECKSUM=() RECEIPT=()
ops="" distinct_bytes=0 distinct=0

note "two distinct random files of each size: A with Content-Length, B chunked"
for size in "${sizes[@]}"; do
  for copy in a b; do
    file=$TEST_TMP/$copy-$size
    random_file "$file" "$size"
    mode=length
    [ "$copy" = b ] && mode=chunked
    start=$(now_ms)
    upload_asset "$MAC" "$file" "$mode"
    took=$(( $(now_ms) - start ))
    CHECKSUM[$copy-$size]=$UP_CHECKSUM
    RECEIPT[$copy-$size]=$UP_RECEIPT
    distinct=$((distinct + 1))
    distinct_bytes=$((distinct_bytes + size))
    [ "$size" -ge 1000000 ] && note "upload of $size bytes ($mode) took $took ms"
  done
  # The empty file: both copies are the same bytes.
  [ "$size" = 0 ] && { distinct=$((distinct - 1)); }
done
ok "uploads of ${sizes[*]} bytes, each with Content-Length and chunked: 200 with the sha256sum checksum and the size"

note "the same bytes again, with the other framing"
for size in "${sizes[@]}"; do
  for copy in a b; do
    [ "$size" -ge 1000000 ] && [ "$copy" = b ] && continue
    mode=chunked
    [ "$copy" = b ] && mode=length
    upload_asset "$PHONE" "$TEST_TMP/$copy-$size" "$mode"
    [ "$UP_CHECKSUM" = "${CHECKSUM[$copy-$size]}" ] || fail "re-upload of $copy-$size: checksum changed"
    # Records below are saved with the receipts of the second uploads.
    RECEIPT[$copy-$size]=$UP_RECEIPT
  done
done
ok "re-uploads (the other framing, another device) answer the same checksums"

stored=$(psql_db "SELECT count(*) || ' ' || count(*) FILTER (WHERE complete) || ' ' || COALESCE(sum(size), 0) FROM assets")
[ "$stored" = "$distinct $distinct $distinct_bytes" ] \
  || fail "assets rows (all, complete, bytes): expected '$distinct $distinct $distinct_bytes', found '$stored' (identical bytes must be stored once)"
chunk_bytes=$(psql_db "SELECT COALESCE(sum(length(bytes)), 0) FROM asset_chunks")
[ "$chunk_bytes" = "$distinct_bytes" ] || fail "asset_chunks hold $chunk_bytes bytes, the distinct assets $distinct_bytes"
bad=$(psql_db "SELECT count(*) FROM assets a WHERE a.size <> COALESCE((SELECT sum(length(c.bytes)) FROM asset_chunks c WHERE c.asset_id = a.id), 0)
                  OR (SELECT count(*) FROM asset_chunks c WHERE c.asset_id = a.id) <> COALESCE((SELECT max(c.n) + 1 FROM asset_chunks c WHERE c.asset_id = a.id), 0)")
[ "$bad" = 0 ] || fail "$bad assets whose chunks do not add up to their size or are not numbered 0..n-1"
note "chunk rows: $(psql_db "SELECT count(*) || ' (largest ' || COALESCE(max(length(bytes)), 0) || ' bytes)' FROM asset_chunks")"
ok "stored once: $distinct assets rows holding $distinct_bytes bytes in all, chunks add up to each asset's size"

note "records point at the assets; the phone looks them up and downloads through downloadURL"
for size in "${sizes[@]}"; do
  for copy in a b; do
    ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"$copy-$size\",\"recordType\":\"Blob\",\"fields\":{\"data\":$(asset_field "${CHECKSUM[$copy-$size]}" "$size" "${RECEIPT[$copy-$size]}")}}}"
  done
done
api_ok "$MAC" records/modify "{\"operations\":[$ops]}"
expect_item_codes "$(printf 'ok %.0s' "${sizes[@]}" "${sizes[@]}" | sed 's/ $//')" "records with assets"
for size in "${sizes[@]}"; do
  url=$(asset_member "a-$size" data downloadURL) || fail "the saved record a-$size has no downloadURL: ${HTTP_BODY:0:400}"
  [[ $url == "$NIMBUS_URL"/* ]] || fail "downloadURL $url is not an absolute URL of $NIMBUS_URL"
  [ "$(asset_member "a-$size" data fileChecksum)" = "${CHECKSUM[a-$size]}" ] || fail "saved record a-$size: fileChecksum differs"
  [ "$(asset_member "a-$size" data size)" = "$size" ] || fail "saved record a-$size: size differs"
  asset_member "a-$size" data receipt >/dev/null && fail "the saved record a-$size shows its receipt"
done
ok "the modify answer carries fileChecksum, size and an absolute downloadURL (no receipt)"

names=""
for size in "${sizes[@]}"; do names+="${names:+,}{\"recordName\":\"a-$size\"},{\"recordName\":\"b-$size\"}"; done
api_ok "$PHONE" records/lookup "{\"records\":[$names]}"
lookup=$HTTP_BODY
for size in "${sizes[@]}"; do
  for copy in a b; do
    name=$copy-$size
    url=$(asset_member "$name" data downloadURL "$lookup") || fail "lookup of $name: no downloadURL in ${lookup:0:300}"
    start=$(now_ms)
    asset_get "$PHONE" "$url" "$TEST_TMP/down-$name"
    took=$(( $(now_ms) - start ))
    expect_status 200 "download of $name"
    expect_same_file "$TEST_TMP/$name" "$TEST_TMP/down-$name" "download of $name"
    [ "$(b64_sha256 "$TEST_TMP/down-$name")" = "${CHECKSUM[$name]}" ] || fail "download of $name: sha256sum differs from fileChecksum"
    expect_header Content-Length "$size"
    expect_header ETag "\"${CHECKSUM[$name]}\""
    [ "$size" -ge 1000000 ] && note "download of $size bytes took $took ms"
  done
done
ok "the phone downloaded both byte-identical (Content-Length, ETag = \"fileChecksum\", sha256sum = fileChecksum)"

note "an upload and the next request on one keep-alive connection"
for framing in length chunked; do
  asset_upload_url "$MAC" Blob data
  if [ "$framing" = length ]; then
    body=$'Content-Length: 10\r\n\r\n0123456789'
  else
    body=$'Transfer-Encoding: chunked\r\n\r\n4\r\n0123\r\n6\r\n456789\r\n0\r\n\r\n'
  fi
  raw_request "POST $ASSET_URL_PATH HTTP/1.1"$'\r\n'"Host: x"$'\r\n'"Authorization: Bearer $MAC"$'\r\n'"$body""GET /healthz HTTP/1.1"$'\r\n'"Host: x"$'\r\n'"Connection: close"$'\r\n\r\n' 5
  parse_responses POST GET
  [ "${RESP_STATUS[*]}" = "200 200" ] || fail "upload ($framing) pipelined with GET /healthz answered ${RESP_STATUS[*]}"
  parse_upload "${RESP_BODY[0]}"
  printf 0123456789 >"$TEST_TMP/ten"
  [ "$UP_SIZE" = 10 ] && [ "$UP_CHECKSUM" = "$(b64_sha256 "$TEST_TMP/ten")" ] || fail "pipelined upload ($framing) answered ${RESP_BODY[0]}"
done
ok "after an upload (Content-Length or chunked) the connection serves the next request"

expect_no_server_errors
