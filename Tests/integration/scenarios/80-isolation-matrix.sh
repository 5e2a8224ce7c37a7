#!/usr/bin/env bash
# Isolation matrix (issue 7, security): two users, each owning one of every kind of object (zone,
# records, an uploaded asset and its download URL, an unused upload URL, subscriptions, a
# notification channel and its cursor, record/zone sync tokens, a query continuation marker, an
# asset receipt). Each user then sends every route of docs/api.md with the OTHER user's names and ids,
# and the same request with a name or id that exists nowhere (a fresh name, or the opaque value
# with one character changed). The two answers must be identical: status, every header but Date
# and Content-Length, and the body with uuids, change tags and timestamps removed and the name
# swapped for @. Listings (zones/list, subscriptions/list, unscoped queries and feeds, tokens/create,
# users/current) must not mention any of the other user's names. Every difference is a leak; the
# scenario prints `isolation: N route×object checks, 0 leaks` and finally checks that the owner's
# objects are untouched. ISOLATION_VERBOSE=1 prints every probe's (shared) answer.
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
  api_ok "$t" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"'"$u"'-zone"}}}]}'
  api_ok "$t" records/modify '{"operations":[
    {"operationType":"create","record":{"recordName":"'"$u"'-note","recordType":"Note","fields":{"text":{"value":"'"$u"' private"}}}},
    {"operationType":"create","record":{"recordName":"'"$u"'-note2","recordType":"Note","fields":{"text":{"value":"two"}}}},
    {"operationType":"create","record":{"recordName":"'"$u"'-note3","recordType":"Note","fields":{"text":{"value":"three"}}}}]}'
  expect_item_codes "ok ok ok" "$u's notes"
  OBJ[$u.tag]=$(record_tag "$u-note")
  api_ok "$t" records/modify '{"zoneID":{"zoneName":"'"$u"'-zone"},"operations":[{"operationType":"create","record":{"recordName":"'"$u"'-secret","recordType":"Note","fields":{"text":{"value":"hidden"}}}}]}'
  expect_item_codes ok "$u's secret"
  OBJ[$u.secret_tag]=$(record_tag "$u-secret")

  random_file "$TEST_TMP/$u.bin" 3000
  upload_asset "$t" "$TEST_TMP/$u.bin"
  OBJ[$u.receipt]=$UP_RECEIPT OBJ[$u.checksum]=$UP_CHECKSUM
  api_ok "$t" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"'"$u"'-photo","recordType":"Blob","fields":{"data":'"$UP_FIELD"'}}}]}'
  expect_item_codes ok "$u's photo record"
  OBJ[$u.download]=$(asset_member "$u-photo" data downloadURL) || fail "no downloadURL for $u-photo: $HTTP_BODY"
  OBJ[$u.download]=${OBJ[$u.download]#"$NIMBUS_URL"}
  asset_upload_url "$t" Blob data
  OBJ[$u.upload]=$ASSET_URL_PATH

  api_ok "$t" subscriptions/modify '{"operations":[
    {"operationType":"create","subscription":{"subscriptionID":"'"$u"'-sub","subscriptionType":"zone","zoneID":{"zoneName":"'"$u"'-zone"},"firesOn":["create"]}},
    {"operationType":"create","subscription":{"subscriptionID":"'"$u"'-qsub","subscriptionType":"query","query":{"recordType":"Note"},"notificationInfo":{"title":"'"$u"'"}}}]}'
  [[ $HTTP_BODY != *serverErrorCode* ]] || fail "$u's subscriptions: $HTTP_BODY"
  api_ok "$t" tokens/create '{}'
  OBJ[$u.channel]=$(json_field webcourierURL) || fail "tokens/create: $HTTP_BODY"
  OBJ[$u.channel]=${OBJ[$u.channel]#"$NIMBUS_URL"}
  OBJ[$u.cursor]=$(json_field cursor) || fail "tokens/create without cursor: $HTTP_BODY"

  api_ok "$t" records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
  OBJ[$u.default_token]=$(json_last_field syncToken)
  api_ok "$t" records/changes '{"zoneID":{"zoneName":"'"$u"'-zone"}}'
  OBJ[$u.zone_token]=$(json_last_field syncToken)
  api_ok "$t" zones/changes '{}'
  OBJ[$u.db_token]=$(json_last_field syncToken)
  api_ok "$t" records/query '{"query":{"recordType":"Note"},"resultsLimit":1}'
  OBJ[$u.marker]=$(json_last_field continuationMarker) || fail "$u's query gave no continuationMarker: $HTTP_BODY"
  local key
  for key in tag receipt download upload channel cursor default_token zone_token db_token marker; do
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
  local tag=${OBJ[$o.tag]}

  # records/lookup, records/query, records/changes
  probe "records/lookup name" op:records/lookup '{"records":[{"recordName":"@"}]}' "$o-note" "$m-note"
  probe "records/lookup zone" op:records/lookup '{"zoneID":{"zoneName":"@"},"records":[{"recordName":"'"$o"'-secret"}]}' "$o-zone" "$m-zone"
  probe "records/lookup desiredKeys" op:records/lookup '{"records":[{"recordName":"@"}],"desiredKeys":["text"]}' "$o-photo" "$m-photo"
  probe "records/query zone" op:records/query '{"zoneID":{"zoneName":"@"},"query":{"recordType":"Note"}}' "$o-zone" "$m-zone"
  probe "records/query ___recordID" op:records/query '{"query":{"recordType":"Note","filterBy":[{"fieldName":"___recordID","comparator":"EQUALS","fieldValue":{"value":"@"}}]}}' "$o-note" "$m-note"
  probe "records/query text" op:records/query '{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"EQUALS","fieldValue":{"value":"@"}}]}}' "$o private" "$m private"
  probe "records/query continuationMarker" op:records/query '{"query":{"recordType":"Note"},"continuationMarker":"@"}' "${OBJ[$o.marker]}" "$(forge "${OBJ[$o.marker]}")"
  probe "records/changes zone" op:records/changes '{"zoneID":{"zoneName":"@"}}' "$o-zone" "$m-zone"
  probe "records/changes zone, wait" op:records/changes '{"zoneID":{"zoneName":"@"},"wait":1}' "$o-zone" "$m-zone"
  probe "records/changes foreign token" op:records/changes '{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"@"}' "${OBJ[$o.default_token]}" "$(forge "${OBJ[$o.default_token]}")"
  probe "records/changes foreign zone token, own zone" op:records/changes '{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"@"}' "${OBJ[$o.zone_token]}" "$(forge "${OBJ[$o.zone_token]}")"
  probe "records/changes foreign token, foreign zone" op:records/changes '{"zoneID":{"zoneName":"'"$o"'-zone"},"syncToken":"@"}' "${OBJ[$o.zone_token]}" "$(forge "${OBJ[$o.zone_token]}")"

  # records/modify that cannot create anything
  local kind
  for kind in update replace delete; do
    probe "records/modify $kind" op:records/modify '{"operations":[{"operationType":"'$kind'","record":{"recordName":"@","recordType":"Note","recordChangeTag":"'"$tag"'","fields":{"text":{"value":"x"}}}}]}' "$o-note" "$m-note"
    probe "records/modify atomic $kind" op:records/modify '{"atomic":true,"operations":[{"operationType":"'$kind'","record":{"recordName":"@","recordType":"Note","recordChangeTag":"'"$tag"'","fields":{"text":{"value":"x"}}}}]}' "$o-note" "$m-note"
  done
  probe "records/modify forceDelete" op:records/modify '{"operations":[{"operationType":"forceDelete","record":{"recordName":"@"}}]}' "$o-note" "$m-note"
  probe "records/modify in zone" op:records/modify '{"zoneID":{"zoneName":"@"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"'"$o"'-secret","recordType":"Note","fields":{"text":{"value":"x"}}}}]}' "$o-zone" "$m-zone"
  probe "records/modify DELETE_SELF reference" op:records/modify '{"operations":[{"operationType":"create","record":{"recordName":"'"$VIEWER"'-child","recordType":"Child","fields":{"parent":{"value":{"recordName":"@","action":"DELETE_SELF"},"type":"REFERENCE"}}}}]}' "$o-note" "$m-note"
  probe "records/modify asset receipt" op:records/modify '{"operations":[{"operationType":"create","record":{"recordName":"'"$VIEWER"'-stolen","recordType":"Blob","fields":{"data":{"value":{"fileChecksum":"'"${OBJ[$o.checksum]}"'","size":3000,"receipt":"@"},"type":"ASSETID"}}}}]}' "${OBJ[$o.receipt]}" "$(forge "${OBJ[$o.receipt]}")"

  # zones
  probe "zones/lookup" op:zones/lookup '{"zones":[{"zoneName":"@"}]}' "$o-zone" "$m-zone"
  probe "zones/modify delete" op:zones/modify '{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"@"}}}]}' "$o-zone" "$m-zone"
  probe "zones/changes foreign token" op:zones/changes '{"syncToken":"@"}' "${OBJ[$o.db_token]}" "$(forge "${OBJ[$o.db_token]}")"
  probe "zones/changes foreign token, wait" op:zones/changes '{"syncToken":"@","wait":1}' "${OBJ[$o.db_token]}" "$(forge "${OBJ[$o.db_token]}")"

  # subscriptions
  probe "subscriptions/lookup" op:subscriptions/lookup '{"subscriptions":[{"subscriptionID":"@"}]}' "$o-sub" "$m-sub"
  probe "subscriptions/modify delete" op:subscriptions/modify '{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"@"}}]}' "$o-sub" "$m-sub"
  probe "subscriptions/modify update" op:subscriptions/modify '{"operations":[{"operationType":"update","subscription":{"subscriptionID":"@","subscriptionType":"database","firesOn":["create"]}}]}' "$o-qsub" "$m-qsub"
  probe "subscriptions/modify zone subscription on foreign zone" op:subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"'"$VIEWER"'-zsub","subscriptionType":"zone","zoneID":{"zoneName":"@"}}}]}' "$o-zone" "$m-zone" \
    op:subscriptions/modify '{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"'"$VIEWER"'-zsub"}}]}'

  # assets
  probe "assets/upload zone" op:assets/upload '{"zoneID":{"zoneName":"@"},"tokens":[{"recordType":"Blob","fieldName":"data"}]}' "$o-zone" "$m-zone"
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
  unlisted "zones/list" get "$(api_path zones/list)"
  unlisted "subscriptions/list" get "$(api_path subscriptions/list)"
  unlisted "users/current" get "$(api_path users/current)"
  unlisted "records/query Note" op:records/query '{"query":{"recordType":"Note"}}'
  unlisted "records/query Blob" op:records/query '{"query":{"recordType":"Blob"}}'
  unlisted "records/changes _defaultZone" op:records/changes '{"zoneID":{"zoneName":"_defaultZone"}}'
  unlisted "zones/changes" op:zones/changes '{}'
  unlisted "tokens/create" op:tokens/create '{}'
  unlisted "webcourier own channel" get "${OBJ[$VIEWER.channel]}"

  # Last: probes that create the viewer's own object under the owner's name (cleaned up at once).
  probe "records/modify create" op:records/modify '{"operations":[{"operationType":"create","record":{"recordName":"@","recordType":"Note","fields":{"text":{"value":"x"}}}}]}' "$o-note" "$m-new1" \
    op:records/modify '{"operations":[{"operationType":"forceDelete","record":{"recordName":"@"}}]}'
  probe "records/modify forceUpdate" op:records/modify '{"operations":[{"operationType":"forceUpdate","record":{"recordName":"@","recordType":"Note","fields":{"text":{"value":"x"}}}}]}' "$o-note2" "$m-new2" \
    op:records/modify '{"operations":[{"operationType":"forceDelete","record":{"recordName":"@"}}]}'
  probe "records/modify forceReplace" op:records/modify '{"operations":[{"operationType":"forceReplace","record":{"recordName":"@","recordType":"Note","fields":{"text":{"value":"x"}}}}]}' "$o-note3" "$m-new3" \
    op:records/modify '{"operations":[{"operationType":"forceDelete","record":{"recordName":"@"}}]}'
  probe "subscriptions/modify create" op:subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"@","subscriptionType":"database"}}]}' "$o-sub" "$m-sub2" \
    op:subscriptions/modify '{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"@"}}]}'
  probe "zones/modify create" op:zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"@"}}}]}' "$o-zone" "$m-zone2" \
    op:zones/modify '{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"@"}}}]}'
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
  api_ok "$t" records/lookup '{"records":[{"recordName":"'"$u"'-note"}]}'
  [ "$(record_tag "$u-note")" = "${OBJ[$u.tag]}" ] || fail "$u-note changed: $HTTP_BODY"
  api_ok "$t" records/lookup '{"zoneID":{"zoneName":"'"$u"'-zone"},"records":[{"recordName":"'"$u"'-secret"}]}'
  [ "$(record_tag "$u-secret")" = "${OBJ[$u.secret_tag]}" ] || fail "$u-secret changed: $HTTP_BODY"
  api_ok "$t" subscriptions/lookup '{"subscriptions":[{"subscriptionID":"'"$u"'-sub"},{"subscriptionID":"'"$u"'-qsub"}]}'
  [[ $HTTP_BODY != *serverErrorCode* ]] || fail "$u's subscriptions changed: $HTTP_BODY"
  [[ $HTTP_BODY == *'"subscriptionType":"query"'* ]] || fail "$u-qsub is no longer a query subscription: $HTTP_BODY"
  asset_get "$t" "$NIMBUS_URL${OBJ[$u.download]}" "$TEST_TMP/$u.down"
  expect_status 200 "$u's download"
  expect_same_file "$TEST_TMP/$u.bin" "$TEST_TMP/$u.down" "$u's asset"
  request GET "${OBJ[$u.channel]}?since=${OBJ[$u.cursor]}" -H "Authorization: Bearer $t"
  expect_status 200 "$u's channel"
  asset_post "$t" "$NIMBUS_URL${OBJ[$u.upload]}" "$TEST_TMP/$u.bin"
  expect_status 200 "$u's unused upload URL still works"
done
ok "records, subscriptions, assets, channels and upload URLs of both users are as they left them"

echo "isolation: $CHECKS route×object checks, $LEAKS leaks"
[ "$LEAKS" -eq 0 ] || fail "$LEAKS leaks"
expect_no_server_errors
