#!/usr/bin/env bash
# Isolation matrix (issue 7, security), over a real socket: each of two users GETs and HEADs the
# other's asset download URL and the same URL with one character changed (a URL that exists
# nowhere); the two answers must be identical on the wire — status, every header but Date (here
# Content-Length too: the connection frames a HEAD answer without its body, HTTPExchange) and the
# body with error ids removed. ISOLATION_VERBOSE=1 prints every probe's (shared) answer. The rest
# of the matrix is in process: the record, zone and subscription rows in
# Tests/NimbusAPITests/IsolationMatrixTests.swift, the asset and notification-channel rows
# (receipts, upload URLs, Range and If-None-Match downloads, channels and cursors, listings) in
# Tests/NimbusAPITests/IsolationMatrixAssetTests.swift.
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

# setup_user USER: USER's photo record and its download URL (a path), in OBJ[USER.download].
setup_user() {
  local u=$1 t=${TOKEN[$1]}
  random_file "$TEST_TMP/$u.bin" 3000
  upload_asset "$t" "$TEST_TMP/$u.bin"
  api_ok "$t" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"'"$u"'-photo","recordType":"Blob","fields":{"data":'"$UP_FIELD"'}}}]}'
  expect_item_codes ok "$u's photo record"
  OBJ[$u.download]=$(asset_member "$u-photo" data downloadURL) || fail "no downloadURL for $u-photo: $HTTP_BODY"
  OBJ[$u.download]=${OBJ[$u.download]#"$NIMBUS_URL"}
  [ -n "${OBJ[$u.download]}" ] || fail "setup of $u: no download URL"
}

# normalized VALUE: the last answer as status, headers (no Date) and body, with error ids and
# VALUE (replaced by @) taken out.
normalized() {
  local headers
  headers=$(printf '%s\n' "$HTTP_HEADERS" | grep -a -v '^$' | sort)
  # (A HEAD answer's "body" is curl's copy of the headers.)
  printf '%s\n%s\n%s\n' "$HTTP_STATUS" "$headers" "$HTTP_BODY" | tr -d '\r' | grep -a -v -i '^date:' | sed \
    -e 's/"uuid":"[^"]*"/"uuid":"#"/g' -e 's/(error id [^)]*)//g' -e "s|$1|@|g"
}

# probe WHAT METHOD FOREIGN MISSING: the viewer's answer to METHOD of the owner's FOREIGN path
# equals the one of MISSING.
probe() {
  local what=$1 method=$2 foreign=$3 missing=$4 a b
  CHECKS=$((CHECKS + 1))
  request "$method" "$foreign" -H "Authorization: Bearer $VIEWER_TOKEN"
  a=$(normalized "$foreign")
  request "$method" "$missing" -H "Authorization: Bearer $VIEWER_TOKEN"
  b=$(normalized "$missing")
  [ -n "${ISOLATION_VERBOSE:-}" ] && printf '%s→%s %s: %s\n' "$VIEWER" "$OWNER" "$what" "$(printf '%s' "$a" | tr '\n' ' ' | cut -c1-220)"
  if [ "$a" != "$b" ]; then
    LEAKS=$((LEAKS + 1))
    fail_later "LEAK $VIEWER→$OWNER $what:
      foreign: $(printf '%s' "$a" | tr '\n' ' ' | cut -c1-400)
      missing: $(printf '%s' "$b" | tr '\n' ' ' | cut -c1-400)"
  fi
}

# matrix VIEWER OWNER: OWNER's download URL, as VIEWER.
matrix() {
  VIEWER=$1 OWNER=$2 VIEWER_TOKEN=${TOKEN[$1]}
  local download=${OBJ[$2.download]}
  probe "download URL" GET "$download" "$(forge "$download")"
  probe "download URL, HEAD" HEAD "$download" "$(forge "$download")"
}

note "each user's photo"
setup_user alice
setup_user bob

note "bob with alice's download URL, then alice with bob's"
matrix bob alice
matrix alice bob

note "the owners' assets are untouched"
for u in alice bob; do
  asset_get "${TOKEN[$u]}" "$NIMBUS_URL${OBJ[$u.download]}" "$TEST_TMP/$u.down"
  expect_status 200 "$u's download"
  expect_same_file "$TEST_TMP/$u.bin" "$TEST_TMP/$u.down" "$u's asset"
done
ok "both users' assets are as they left them"

echo "isolation on the wire: $CHECKS route×object checks, $LEAKS leaks"
[ "$LEAKS" -eq 0 ] || fail "$LEAKS leaks"
expect_no_server_errors
