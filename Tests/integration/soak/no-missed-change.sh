#!/usr/bin/env bash
# No missed change (issue 3, first bullet), the soak against the real binary that
# bench/no-missed-change.sh runs for minutes (not a scenario of Tests/integration/run.sh: the
# rule is tested in-process by Tests/NimbusAPITests/NoMissedChangeTests.swift): 8 writers (each its own device token) create, update
# and delete records in one zone — their own names and 5 shared names updated by everyone with
# forceUpdate — while 4 readers follow records/changes with their sync tokens in pages of 7 (two
# from the start, two joining late from no token while the writes go on). Writers log every
# acknowledged write. At the end every reader catches up and must hold exactly the acknowledged
# records, each with its last acknowledged recordChangeTag (deleted ones absent or tombstones),
# nothing else; and the feed never went backwards: every page's change tags (base 36 of the
# zone's sequence) are ascending and above every tag of the reader's earlier pages.
source "$(dirname "$0")/../lib.sh"

SECONDS_OF_WRITES=${NO_MISS_SECONDS:-15}
WRITERS=8 READERS=4 PAGE=7 SHARED=5
ERRORS="$TEST_TMP/errors" STOP="$TEST_TMP/writers-done"
: >"$ERRORS"

start_store_server
nimbus_admin user add alice >/dev/null
for ((k = 1; k <= WRITERS; k++)); do issue_token "WRITER_$k" alice "writer-$k"; done
for ((i = 1; i <= READERS; i++)); do issue_token "READER_$i" alice "reader-$i"; done
api_ok "$WRITER_1" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Feed"}}}]}'
# The first save defines the type's fields (development schema), before the writers race.
api_ok "$WRITER_1" records/modify '{"zoneID":{"zoneName":"Feed"},"operations":[{"operationType":"create","record":{"recordName":"seed","recordType":"Item","fields":{"writer":{"value":0},"n":{"value":0},"payload":{"value":"seed"}}}}]}'
expect_item_codes ok "seed"
record_summary >"$TEST_TMP/acks-0"

# writer K TOKEN: writes until DEADLINE; logs `NAME TAG` (TAG - for a deletion) per acknowledged
# operation to acks-K in acknowledgement order, and any failure to ERRORS.
writer() {
  local k=$1 token=$2 n=0 roll ops op name tag out status body m index
  local -a live=() deleted=()
  local -A tags=()
  without() { # ARRAY NAME: removes NAME from the array ARRAY
    local -n array=$1
    local kept=() entry
    for entry in "${array[@]}"; do [ "$entry" = "$2" ] || kept+=("$entry"); done
    array=("${kept[@]}")
  }
  fields() { printf '{"writer":{"value":%d},"n":{"value":%d},"payload":{"value":"%s-%s"}}' "$k" "$n" "$RANDOM" "$RANDOM"; }
  while [ "$(now_ms)" -lt "$DEADLINE" ]; do
    n=$((n + 1))
    roll=$((RANDOM % 10))
    ops=""
    if [ "$roll" -lt 3 ] || [ ${#live[@]} -eq 0 ]; then
      ops="{\"operationType\":\"create\",\"record\":{\"recordName\":\"w$k-$n\",\"recordType\":\"Item\",\"fields\":$(fields)}}"
    elif [ "$roll" -lt 5 ]; then
      ops="{\"operationType\":\"forceUpdate\",\"record\":{\"recordName\":\"s$((RANDOM % SHARED))\",\"recordType\":\"Item\",\"fields\":$(fields)}}"
    elif [ "$roll" -lt 7 ]; then
      name=${live[RANDOM % ${#live[@]}]}
      ops="{\"operationType\":\"update\",\"record\":{\"recordName\":\"$name\",\"recordType\":\"Item\",\"recordChangeTag\":\"${tags[$name]}\",\"fields\":$(fields)}}"
    elif [ "$roll" -lt 8 ]; then
      index=$((RANDOM % ${#live[@]}))
      name=${live[index]}
      if [ $((RANDOM % 2)) -eq 0 ]; then
        ops="{\"operationType\":\"forceDelete\",\"record\":{\"recordName\":\"$name\"}}"
      else
        ops="{\"operationType\":\"delete\",\"record\":{\"recordName\":\"$name\",\"recordChangeTag\":\"${tags[$name]}\"}}"
      fi
    elif [ "$roll" -lt 9 ] && [ ${#deleted[@]} -gt 0 ]; then
      name=${deleted[RANDOM % ${#deleted[@]}]}
      ops="{\"operationType\":\"create\",\"record\":{\"recordName\":\"$name\",\"recordType\":\"Item\",\"fields\":$(fields)}}"
    else
      m=$((RANDOM % SHARED))
      ops="{\"operationType\":\"create\",\"record\":{\"recordName\":\"w$k-$n-a\",\"recordType\":\"Item\",\"fields\":$(fields)}}"
      ops+=",{\"operationType\":\"forceUpdate\",\"record\":{\"recordName\":\"s$m\",\"recordType\":\"Item\",\"fields\":$(fields)}}"
      ops+=",{\"operationType\":\"create\",\"record\":{\"recordName\":\"w$k-$n-b\",\"recordType\":\"Item\",\"fields\":$(fields)}}"
    fi
    out=$(api_call "$token" records/modify "{\"zoneID\":{\"zoneName\":\"Feed\"},\"operations\":[$ops]}")
    status=${out##* } body=${out% *}
    items=""
    [ "$status" != 200 ] || items=$(json_read rows recordName recordName recordChangeTag=- deleted=false serverErrorCode=ok <<<"$body")
    if [ "$status" != 200 ] || contains "$items" -q -v ' ok$'; then
      printf 'writer %d: %s %s\n' "$k" "$status" "${body:0:300}" >>"$ERRORS"
      continue
    fi
    while read -r name tag is_deleted _; do
      if [ "$is_deleted" = true ]; then
        printf '%s -\n' "$name"
        unset "tags[$name]"
        without live "$name"
        deleted+=("$name")
      else
        [ "$tag" != - ] || { printf 'writer %d: no tag for %s in %s\n' "$k" "$name" "${body:0:200}" >>"$ERRORS"; continue; }
        printf '%s %s\n' "$name" "$tag"
        if [[ $name == w* ]]; then
          [ -n "${tags[$name]:-}" ] || live+=("$name")
          tags[$name]=$tag
          without deleted "$name"
        fi
      fi
    done <<<"$items" >>"$TEST_TMP/acks-$k"
  done
}

# reader I TOKEN DELAY: follows records/changes in pages of PAGE from DELAY seconds on until the
# writers are done, then catches up once more. Keeps `NAME TAG` / `NAME -` per record in
# reader-I.state and `pages records morepages` in reader-I.stats; failures go to ERRORS.
reader() {
  local i=$1 token=$2 sync="" final=0 out status body summary name tag number count
  local pages=0 received=0 more_pages=0 previous_max=-1 page_max more
  local -A state=() seen=()
  sleep "$3"
  while :; do
    if [ -n "$sync" ]; then
      out=$(api_call "$token" records/changes "{\"zoneID\":{\"zoneName\":\"Feed\"},\"resultsLimit\":$PAGE,\"syncToken\":\"$sync\"}")
    else
      out=$(api_call "$token" records/changes "{\"zoneID\":{\"zoneName\":\"Feed\"},\"resultsLimit\":$PAGE}")
    fi
    status=${out##* } body=${out% *}
    if [ "$status" != 200 ]; then
      printf 'reader %d: status %s: %s\n' "$i" "$status" "${body:0:300}" >>"$ERRORS"
      break
    fi
    pages=$((pages + 1))
    items=$(json_read rows recordName recordName recordChangeTag=- deleted=false <<<"$body")
    count=$(contains "$items" -c .) || true
    [ "$count" -le "$PAGE" ] || printf 'reader %d: page of %d records, limit %d\n' "$i" "$count" "$PAGE" >>"$ERRORS"
    received=$((received + count))
    page_max=$previous_max
    seen=()
    while read -r name tag deleted; do
      [ -n "$name" ] || continue
      [ "$deleted" = true ] && tag=-
      [ -z "${seen[$name]:-}" ] || printf 'reader %d: %s twice in one page\n' "$i" "$name" >>"$ERRORS"
      seen[$name]=1
      state[$name]=$tag
      [ "$tag" = - ] && continue
      number=$((36#$tag))
      [ "$number" -gt "$page_max" ] || printf 'reader %d: tag %s of %s is not above %d (page %d)\n' "$i" "$tag" "$name" "$page_max" "$pages" >>"$ERRORS"
      page_max=$number
    done <<<"$items"
    previous_max=$page_max
    read -r sync more < <(json_read lasts syncToken moreComing <<<"$body")
    [ "$sync" != - ] || { printf 'reader %d: no syncToken\n' "$i" >>"$ERRORS"; break; }
    if [ "$more" = true ]; then more_pages=$((more_pages + 1)); continue; fi
    [ "$final" = 1 ] && break
    if [ -e "$STOP" ]; then final=1; continue; fi
    sleep 0.$((RANDOM % 3))
  done
  for name in "${!state[@]}"; do printf '%s %s\n' "$name" "${state[$name]}"; done | sort >"$TEST_TMP/reader-$i.state"
  printf '%d %d %d\n' "$pages" "$received" "$more_pages" >"$TEST_TMP/reader-$i.stats"
}

note "$WRITERS writers and $READERS readers for ${SECONDS_OF_WRITES}s (pages of $PAGE)"
DEADLINE=$(( $(now_ms) + SECONDS_OF_WRITES * 1000 ))
reader_pids=() writer_pids=()
for ((i = 1; i <= READERS; i++)); do
  token_var=READER_$i delay=0
  [ "$i" -gt 2 ] && delay=$(( SECONDS_OF_WRITES / 3 ))   # readers 3 and 4 join late, from no token
  reader "$i" "${!token_var}" "$delay" &
  reader_pids+=($!)
done
for ((k = 1; k <= WRITERS; k++)); do
  token_var=WRITER_$k
  writer "$k" "${!token_var}" &
  writer_pids+=($!)
done
for pid in "${writer_pids[@]}"; do wait "$pid"; done
touch "$STOP"
deadline=$(( $(now_ms) + 30000 ))
for pid in "${reader_pids[@]}"; do
  while process_alive "$pid"; do
    [ "$(now_ms)" -lt "$deadline" ] || { kill "$pid"; fail "reader pid $pid did not catch up within 30 s"; }
    sleep 0.1
  done
  wait "$pid"
done
if [ -s "$ERRORS" ]; then
  head -n 20 "$ERRORS" >&2
  fail "$(wc -l <"$ERRORS") failures during the run (above)"
fi

note "expected state from the writers' acknowledgements"
declare -A expected=()
acks=0
for ((k = 0; k <= WRITERS; k++)); do
  while read -r name tag; do
    acks=$((acks + 1))
    if [[ $name == s* ]] && [ -n "${expected[$name]:-}" ] && [ "$((36#$tag))" -lt "$((36#${expected[$name]}))" ]; then
      continue   # shared names: the highest acknowledged tag is the last commit
    fi
    expected[$name]=$tag
  done <"$TEST_TMP/acks-$k"
done
for name in "${!expected[@]}"; do printf '%s %s\n' "$name" "${expected[$name]}"; done | sort >"$TEST_TMP/expected"
live_expected=$(grep -c -v ' -$' "$TEST_TMP/expected")
deleted_expected=$(grep -c ' -$' "$TEST_TMP/expected")
[ "$acks" -gt 50 ] || fail "only $acks acknowledged writes: the run proves little"
[ "$deleted_expected" -gt 0 ] || fail "no acknowledged deletion in the run"

# The ground truth agrees with the acknowledgements: lookups and a fresh fetch.
names=$(cut -d' ' -f1 "$TEST_TMP/expected")
: >"$TEST_TMP/lookup"
while mapfile -t -n 300 batch && [ ${#batch[@]} -gt 0 ]; do
  body=$(printf '{"recordName":"%s"},' "${batch[@]}")
  api_ok "$READER_1" records/lookup "{\"zoneID\":{\"zoneName\":\"Feed\"},\"records\":[${body%,}]}"
  while read -r name code tag; do
    case $code in
      ok) printf '%s %s\n' "$name" "$tag" ;;
      NOT_FOUND) printf '%s -\n' "$name" ;;
      *) fail "lookup of $name: $code in ${HTTP_BODY:0:400}" ;;
    esac
  done < <(json_read rows recordName recordName serverErrorCode=ok recordChangeTag=- <<<"$HTTP_BODY") >>"$TEST_TMP/lookup"
done <<<"$names"
sort -o "$TEST_TMP/lookup" "$TEST_TMP/lookup"
diff "$TEST_TMP/expected" "$TEST_TMP/lookup" >"$TEST_TMP/lookup.diff" \
  || fail "records/lookup disagrees with the acknowledged writes (expected < > stored): $(head -n 10 "$TEST_TMP/lookup.diff" | tr '\n' ' ')"
sync="" : >"$TEST_TMP/fresh"
while :; do
  api_ok "$READER_1" records/changes "{\"zoneID\":{\"zoneName\":\"Feed\"},\"resultsLimit\":100${sync:+,\"syncToken\":\"$sync\"}}"
  record_summary >>"$TEST_TMP/fresh"
  sync=$(json_last_field syncToken)
  [ "$(json_last_field moreComing)" = true ] || break
done
grep -v ' -$' "$TEST_TMP/expected" >"$TEST_TMP/expected-live"
# In pages of 100, applied as a client applies them: the pages after the first are fetched with a
# token, so they also carry the tombstones of records deleted after the first page's position.
awk '{ if ($2 == "-") delete state[$1]; else state[$1] = $2 } END { for (name in state) print name, state[name] }' \
  "$TEST_TMP/fresh" | sort >"$TEST_TMP/fresh-state"
diff "$TEST_TMP/expected-live" "$TEST_TMP/fresh-state" >"$TEST_TMP/fresh.diff" \
  || fail "a fetch from no token disagrees with the acknowledged live records: $(head -n 10 "$TEST_TMP/fresh.diff" | tr '\n' ' ')"
ok "$acks acknowledged writes: $live_expected live records and $deleted_expected deleted, confirmed by records/lookup and a fetch from no token"

note "every reader holds exactly the acknowledged final state"
total_pages=0 total_missed=0 total_stale=0
for ((i = 1; i <= READERS; i++)); do
  read -r pages received more_pages <"$TEST_TMP/reader-$i.stats"
  declare -A held=()
  while read -r name tag; do held[$name]=$tag; done <"$TEST_TMP/reader-$i.state"
  missed=0 stale=0 extra=0
  while read -r name tag; do
    if [ "$tag" = - ]; then
      [ "${held[$name]:--}" = - ] || { stale=$((stale + 1)); printf 'reader %d holds deleted %s as %s\n' "$i" "$name" "${held[$name]}" >&2; }
    elif [ -z "${held[$name]:-}" ]; then
      missed=$((missed + 1)); printf 'reader %d missed %s (%s)\n' "$i" "$name" "$tag" >&2
    elif [ "${held[$name]}" != "$tag" ]; then
      stale=$((stale + 1)); printf 'reader %d holds %s at %s, last acknowledged %s\n' "$i" "$name" "${held[$name]}" "$tag" >&2
    fi
  done <"$TEST_TMP/expected"
  for name in "${!held[@]}"; do
    [ -n "${expected[$name]:-}" ] || { extra=$((extra + 1)); printf 'reader %d holds %s, never acknowledged\n' "$i" "$name" >&2; }
  done
  unset held
  note "reader $i: $pages pages ($more_pages with moreComing), $received records received, $missed missed, $stale stale, $extra extra"
  [ $((missed + stale + extra)) -eq 0 ] || fail "reader $i: $missed missed, $stale stale, $extra extra records"
  [ "$more_pages" -gt 0 ] || fail "reader $i never paged (moreComing was never true): the run proves little"
  total_pages=$((total_pages + pages)) total_missed=$((total_missed + missed)) total_stale=$((total_stale + stale))
done
ok "summary: $acks writes acknowledged by $WRITERS writers, $total_pages pages read by $READERS readers, $total_missed missed, $total_stale stale, no page went backwards"

expect_no_server_errors
