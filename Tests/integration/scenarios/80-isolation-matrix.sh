#!/usr/bin/env bash
# Isolation matrix (issue 7, security), the asset and notification-channel rows: two users, each
# owning an uploaded asset and its download URL, an unused upload URL, an asset receipt, and a
# notification channel and its cursor. Each user then sends those routes with the OTHER user's
# URLs and ids, and the same request with an id that exists nowhere (the opaque value with one
# character changed). The two answers must be identical: status, every header but Date and
# Content-Length, and the body with uuids, change tags and timestamps removed and the name swapped
# for @. Listings (Blob queries, tokens/create, the own channel) must not mention any of the other
# user's names. Every difference is a leak; the scenario prints `isolation: N route×object checks,
# 0 leaks` and finally checks that the owner's objects are untouched. ISOLATION_VERBOSE=1 prints
# every probe's (shared) answer. (The record, zone and subscription rows are in-process:
# Tests/NimbusAPITests/IsolationMatrixTests.swift.)
source "$(dirname "$0")/../lib.sh"

# Bash+curl sends requests faster than a device would; the per-token limit is not under test here.
start_store_server --requests-per-second-per-token 0
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
issue_token ALICE alice mac
issue_token BOB bob mac
declare -A TOKEN=([alice]=$ALICE [bob]=$BOB)
declare -A OBJ
CHECKS=0 LEAKS=0

# forge VALUE: VALUE with one character in its middle changed (an opaque id that exists nowhere).
forge() {
  local value=$1 i=$(( ${#1} / 2 )) c
  c=${value:i:1}
  [ "$c" = A ] && c=B || c=A
  printf '%s%s%s\n' "${value:0:i}" "$c" "${value:i+1}"
}

# setup_user USER: USER's objects, names prefixed with USER-, remembered in OBJ[USER.kind].
setup_user() {
  local u=$1 t=${TOKEN[$1]}
  random_file "$TEST_TMP/$u.bin" 3000
  upload_asset "$t" "$TEST_TMP/$u.bin"
  OBJ[$u.receipt]=$UP_RECEIPT OBJ[$u.checksum]=$UP_CHECKSUM
  api_ok "$t" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"'"$u"'-photo","recordType":"Blob","fields":{"data":'"$UP_FIELD"'}}}]}'
  expect_item_codes ok "$u's photo record"
  OBJ[$u.download]=$(asset_member "$u-photo" data downloadURL) || fail "no downloadURL for $u-photo: $HTTP_BODY"
  OBJ[$u.download]=${OBJ[$u.download]#"$NIMBUS_URL"}
  asset_upload_url "$t" Blob data
  OBJ[$u.upload]=$ASSET_URL_PATH

  api_ok "$t" tokens/create '{}'
  OBJ[$u.channel]=$(json_field webcourierURL) || fail "tokens/create: $HTTP_BODY"
  OBJ[$u.channel]=${OBJ[$u.channel]#"$NIMBUS_URL"}
  OBJ[$u.cursor]=$(json_field cursor) || fail "tokens/create without cursor: $HTTP_BODY"
  local key
  for key in receipt download upload channel cursor; do
    [ -n "${OBJ[$u.$key]}" ] || fail "setup of $u: no $key"
  done
}

# normalized VALUE: the last answer as status, headers (no Date, Content-Length) and body, with
# uuids, change tags, timestamps, sync tokens (those of the viewer's own new zones differ by zone
# id) and VALUE (replaced by @) taken out.
normalized() {
  local headers
  headers=$(printf '%s\n' "$HTTP_HEADERS" | grep -a -v '^$' | sort)
  # (A HEAD answer's "body" is curl's copy of the headers.)
  printf '%s\n%s\n%s\n' "$HTTP_STATUS" "$headers" "$HTTP_BODY" | tr -d '\r' | grep -a -v -i '^\(date\|content-length\):' | sed \
    -e 's/"uuid":"[^"]*",\?//g' -e 's/"recordChangeTag":"[^"]*",\?//g' -e 's/"timestamp":[0-9]*,\?//g' -e 's/"syncToken":"[^"]*"/"syncToken":"#"/g' \
    -e 's/(error id [^)]*)//g' -e "s|$1|@|g"
}

# send KIND TEMPLATE VALUE: one request of bob/alice (VIEWER_TOKEN) with @ in TEMPLATE set to VALUE.
#   op:OPERATION  body TEMPLATE          get:  path TEMPLATE (GET, extra curl args in GET_ARGS)
#   head: path TEMPLATE (HEAD)           post: path TEMPLATE (POST of a few bytes)
send() {
  local kind=$1 template=${2//@/$3}
  case $kind in
    op:*) api "$VIEWER_TOKEN" "${kind#op:}" "$template" ;;
    get) request GET "$template" -H "Authorization: Bearer $VIEWER_TOKEN" "${GET_ARGS[@]}" ;;
    head) request HEAD "$template" -H "Authorization: Bearer $VIEWER_TOKEN" ;;
    post) request POST "$template" -H "Authorization: Bearer $VIEWER_TOKEN" --data-binary 'bob was here' ;;
    *) fail "send: unknown kind $kind" ;;
  esac
}

# probe WHAT KIND TEMPLATE FOREIGN MISSING [CLEANUP_OP CLEANUP_TEMPLATE]: the viewer's answer with the
# owner's FOREIGN value equals the one with MISSING; a CLEANUP request (same @ substitution)
# follows each, for probes that create the viewer's own object.
probe() {
  local what=$1 kind=$2 template=$3 foreign=$4 missing=$5 a b
  CHECKS=$((CHECKS + 1))
  send "$kind" "$template" "$foreign"
  a=$(normalized "$foreign")
  [ $# -ge 7 ] && send "$6" "$7" "$foreign"
  send "$kind" "$template" "$missing"
  b=$(normalized "$missing")
  [ $# -ge 7 ] && send "$6" "$7" "$missing"
  [ -n "${ISOLATION_VERBOSE:-}" ] && printf '%s→%s %s: %s\n' "$VIEWER" "$OWNER" "$what" "$(printf '%s' "$a" | grep -v -i '^content-type:' | tr '\n' ' ' | cut -c1-220)"
  if [ "$a" != "$b" ]; then
    LEAKS=$((LEAKS + 1))
    fail_later "LEAK $VIEWER→$OWNER $what:
      foreign: $(printf '%s' "$a" | tr '\n' ' ' | cut -c1-400)
      missing: $(printf '%s' "$b" | tr '\n' ' ' | cut -c1-400)"
  fi
}

# unlisted WHAT KIND TEMPLATE: the viewer's answer mentions none of the owner's names or ids.
unlisted() {
  local what=$1 needle
  CHECKS=$((CHECKS + 1))
  send "$2" "$3" ""
  [ "$HTTP_STATUS" = 200 ] || fail "$what: status $HTTP_STATUS: ${HTTP_BODY:0:300}"
  for needle in "$OWNER-" "${OBJ[$OWNER.channel]##*/}" "${OBJ[$OWNER.download]##*/}"; do
    if [[ $HTTP_BODY == *"$needle"* ]]; then
      LEAKS=$((LEAKS + 1))
      fail_later "LEAK $VIEWER→$OWNER $what mentions $needle: ${HTTP_BODY:0:400}"
      return
    fi
  done
}

# matrix VIEWER OWNER: every route with OWNER's objects, as VIEWER.
matrix() {
  VIEWER=$1 OWNER=$2 VIEWER_TOKEN=${TOKEN[$1]}
  local o=$2 m="nowhere-$1" before=$CHECKS
  GET_ARGS=()

  probe "records/lookup desiredKeys" op:records/lookup '{"records":[{"recordName":"@"}],"desiredKeys":["text"]}' "$o-photo" "$m-photo"
  probe "records/modify asset receipt" op:records/modify '{"operations":[{"operationType":"create","record":{"recordName":"'"$VIEWER"'-stolen","recordType":"Blob","fields":{"data":{"value":{"fileChecksum":"'"${OBJ[$o.checksum]}"'","size":3000,"receipt":"@"},"type":"ASSETID"}}}}]}' "${OBJ[$o.receipt]}" "$(forge "${OBJ[$o.receipt]}")"

  # assets
  probe "upload URL" post "@" "${OBJ[$o.upload]}" "$(forge "${OBJ[$o.upload]}")"
  probe "download URL" get "@" "${OBJ[$o.download]}" "$(forge "${OBJ[$o.download]}")"
  probe "download URL, HEAD" head "@" "${OBJ[$o.download]}" "$(forge "${OBJ[$o.download]}")"
  GET_ARGS=(-H "Range: bytes=0-9")
  probe "download URL, Range" get "@" "${OBJ[$o.download]}" "$(forge "${OBJ[$o.download]}")"
  GET_ARGS=(-H "If-None-Match: \"$(b64_sha256 "$TEST_TMP/$o.bin")\"")
  probe "download URL, If-None-Match" get "@" "${OBJ[$o.download]}" "$(forge "${OBJ[$o.download]}")"
  GET_ARGS=()

  # notification channels
  probe "webcourier channel" get "@" "${OBJ[$o.channel]}" "$(forge "${OBJ[$o.channel]}")"
  probe "webcourier channel, since" get "@?since=${OBJ[$o.cursor]}" "${OBJ[$o.channel]}" "$(forge "${OBJ[$o.channel]}")"
  probe "webcourier channel, wait" get "@?wait=1" "${OBJ[$o.channel]}" "$(forge "${OBJ[$o.channel]}")"
  probe "webcourier own channel, foreign cursor" get "${OBJ[$VIEWER.channel]}?since=@" "${OBJ[$o.cursor]}" "$(forge "${OBJ[$o.cursor]}")"

  # listings: nothing of the owner's
  unlisted "records/query Blob" op:records/query '{"query":{"recordType":"Blob"}}'
  unlisted "tokens/create" op:tokens/create '{}'
  unlisted "webcourier own channel" get "${OBJ[$VIEWER.channel]}"
  ok "$VIEWER with $OWNER's objects: $((CHECKS - before)) checks"
}

note "each user's objects"
setup_user alice
setup_user bob

note "bob with alice's objects, then alice with bob's"
matrix bob alice
matrix alice bob

note "the owners' objects are untouched"
for u in alice bob; do
  t=${TOKEN[$u]}
  asset_get "$t" "$NIMBUS_URL${OBJ[$u.download]}" "$TEST_TMP/$u.down"
  expect_status 200 "$u's download"
  expect_same_file "$TEST_TMP/$u.bin" "$TEST_TMP/$u.down" "$u's asset"
  request GET "${OBJ[$u.channel]}?since=${OBJ[$u.cursor]}" -H "Authorization: Bearer $t"
  expect_status 200 "$u's channel"
  asset_post "$t" "$NIMBUS_URL${OBJ[$u.upload]}" "$TEST_TMP/$u.bin"
  expect_status 200 "$u's unused upload URL still works"
done
ok "assets, channels and upload URLs of both users are as they left them"

echo "isolation: $CHECKS route×object checks, $LEAKS leaks"
[ "$LEAKS" -eq 0 ] || fail "$LEAKS leaks"
expect_no_server_errors
