#!/usr/bin/env bash
# kill -9 during atomic batches (issue 7, item 5). Four writers send atomic records/modify batches
# into one zone: 5 creates (the single-statement path) or 4 creates and a forceDelete (the locked
# transaction path); every writing transaction sleeps 0..100 ms before COMMIT (the commit-delay
# trigger of Tests/soak/commit-delay.sql). Three times, at a random moment once a writing
# transaction is seen in flight, nimbus is killed with SIGKILL and restarted on the same database. A writer retries an unanswered
# batch with the same body until it is acknowledged (a create of identical fields is an idempotent
# no-op). Afterwards:
#   - every acknowledged record is stored with its acknowledged change tag;
#   - no half batch: every batch's names are all there or none;
#   - the zone's sequences are intact: no two record versions share one, none above the zone's
#     counter, and a fetch from no token lists exactly the stored live records.
source "$(dirname "$0")/../lib.sh"

WRITERS=4 KILLS=3
ROUND_MS=${CRASH_ROUND_MS:-3500}
ACKS="$TEST_TMP/acks" ERRORS="$TEST_TMP/errors" STOP="$TEST_TMP/stop" URL_FILE="$TEST_TMP/url"
: >"$ERRORS"

start_store_server
"$NIMBUS_TEST_PG_BIN/psql" "$NIMBUS_DB_URL" -X -q -v ON_ERROR_STOP=1 -v max_ms=100 -f "$REPO_DIR/Tests/soak/commit-delay.sql" \
  >"$TEST_TMP/delay.out" 2>&1 || fail "installing the commit delay failed: $(cat "$TEST_TMP/delay.out")"
nimbus_admin user add alice >/dev/null
for ((k = 1; k <= WRITERS; k++)); do issue_token "WRITER_$k" alice "writer-$k"; done
api_ok "$WRITER_1" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Crash"}}}]}'
api_ok "$WRITER_1" records/modify '{"zoneID":{"zoneName":"Crash"},"operations":[{"operationType":"create","record":{"recordName":"seed","recordType":"Item","fields":{"batch":{"value":"seed"},"i":{"value":0}}}}]}'
echo "$NIMBUS_URL" >"$URL_FILE"

# writer K TOKEN: batches until STOP exists; acknowledged records go to ACKS-K as `NAME TAG`.
writer() {
  local k=$1 token=$2 n=0 kind size ops i out status body attempts
  while [ ! -e "$STOP" ]; do
    n=$((n + 1))
    kind=a size=5
    [ $((n % 3)) -eq 0 ] && kind=l size=4
    ops=""
    for ((i = 0; i < size; i++)); do
      ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"$kind-$k-$n-$i\",\"recordType\":\"Item\",\"fields\":{\"batch\":{\"value\":\"$kind-$k-$n\"},\"i\":{\"value\":$i}}}}"
    done
    [ "$kind" = l ] && ops+=",{\"operationType\":\"forceDelete\",\"record\":{\"recordName\":\"gone-$k-$n\"}}"
    body="{\"zoneID\":{\"zoneName\":\"Crash\"},\"atomic\":true,\"operations\":[$ops]}"
    attempts=0
    while :; do
      attempts=$((attempts + 1))
      out=$(curl -s --max-time 15 -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        --data-binary "$body" -w ' %{http_code}' "$(cat "$URL_FILE")$(api_path records/modify)")
      status=${out##* } body_out=${out% *}
      if [ "$status" = 200 ]; then
        if [ -n "$(item_codes "$body_out" | grep -v '^ok$')" ]; then
          printf 'writer %d batch %s-%d: %s\n' "$k" "$kind" "$n" "${body_out:0:300}" >>"$ERRORS"
        else
          record_summary "$body_out" | grep -v ' -$' >>"$ACKS-$k"
        fi
        break
      fi
      # No answer (the server was killed, or is starting): the outcome is unknown; retry as is.
      [ "$attempts" -lt 200 ] || { printf 'writer %d batch %s-%d: no answer after %d attempts\n' "$k" "$kind" "$n" "$attempts" >>"$ERRORS"; break; }
      case $status in 000|503) ;; *) printf 'writer %d: status %s: %s\n' "$k" "$status" "${body_out:0:300}" >>"$ERRORS" ;; esac
      sleep 0.1
    done
  done
}

writer_pids=()
for ((k = 1; k <= WRITERS; k++)); do
  token_var=WRITER_$k
  : >"$ACKS-$k"
  writer "$k" "${!token_var}" &
  writer_pids+=($!)
  track_pid "$!"
done

in_flight_total=0
for ((round = 1; round <= KILLS; round++)); do
  sleep "$(awk -v r="$RANDOM" -v base="$ROUND_MS" 'BEGIN {printf "%.2f", (base * 0.5 + r % (base / 2)) / 1000}')"
  # Kill while a writing transaction is open (sleeping before its COMMIT), if one shows within 3 s.
  deadline=$(( $(now_ms) + 3000 ))
  while :; do
    in_flight=$(psql_db "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                         AND backend_xid IS NOT NULL")
    [ "$in_flight" -gt 0 ] || [ "$(now_ms)" -gt "$deadline" ] && break
  done
  acked=$(cat "$ACKS"-* | wc -l)
  kill -KILL "$NIMBUS_PID"
  wait "$NIMBUS_PID" 2>/dev/null
  note "round $round: SIGKILL with $in_flight writing transactions open, $acked records acknowledged so far"
  in_flight_total=$((in_flight_total + in_flight))
  start_nimbus --database-url "$NIMBUS_DB_URL"
  echo "$NIMBUS_URL" >"$URL_FILE"
done
sleep 1.5
touch "$STOP"
for pid in "${writer_pids[@]}"; do
  wait_exit "$pid" 60 || [ $? -ne 124 ] || fail "writer pid $pid did not finish within 60 s"
done
if [ -s "$ERRORS" ]; then
  head -n 20 "$ERRORS" >&2
  fail "$(wc -l <"$ERRORS") writer failures (above)"
fi
note "$in_flight_total writing transactions were open at the $KILLS kills"

note "every acknowledged record is stored with its tag"
sort -u "$ACKS"-* | while read -r name tag; do echo "$name $((36#$tag))"; done | sort >"$TEST_TMP/acked"   # tags are base 36 of the sequence
acked=$(wc -l <"$TEST_TMP/acked")
[ "$acked" -ge 100 ] || fail "only $acked acknowledged records: the run proves little"
psql_db "SELECT record_name || ' ' || r.change_seq FROM records r JOIN zones z ON z.id = r.zone_id
         WHERE z.zone_name = 'Crash' AND NOT r.deleted ORDER BY 1" | sort >"$TEST_TMP/stored"
missing=$(comm -23 "$TEST_TMP/acked" "$TEST_TMP/stored" | wc -l)
[ "$missing" -eq 0 ] || fail "$missing acknowledged records are not stored as acknowledged: $(comm -23 "$TEST_TMP/acked" "$TEST_TMP/stored" | head -n 5 | tr '\n' ' ')"
ok "$acked acknowledged records all stored with their acknowledged tags after $KILLS kills"

note "no half batch"
half=$(psql_db "SELECT b || ':' || count(*) FROM (SELECT regexp_replace(record_name, '-[0-9]+\$', '') AS b FROM records r JOIN zones z ON z.id = r.zone_id
                WHERE z.zone_name = 'Crash' AND record_name <> 'seed' AND record_name NOT LIKE 'gone-%') x
                GROUP BY b HAVING count(*) <> CASE WHEN b LIKE 'a-%' THEN 5 ELSE 4 END")
[ -z "$half" ] || fail "half batches stored: $(printf '%s' "$half" | head -n 5 | tr '\n' ' ')"
batches=$(psql_db "SELECT count(DISTINCT regexp_replace(record_name, '-[0-9]+\$', '')) FROM records WHERE record_name <> 'seed' AND record_name NOT LIKE 'gone-%'")
acked_batches=$(sed 's/-[0-9]* .*//' "$TEST_TMP/acked" | sort -u | wc -l)
ok "no half batch: $batches batches stored whole ($acked_batches acknowledged)"

note "the zone's sequences after the crashes"
seqs=$(psql_db "SELECT count(*) || ' ' || count(DISTINCT r.change_seq) || ' ' || (max(r.change_seq) <= max(z.change_seq))::text
                FROM records r JOIN zones z ON z.id = r.zone_id WHERE z.zone_name = 'Crash'")
read -r rows distinct below <<<"$seqs"
[ "$rows" = "$distinct" ] || fail "$rows record versions share $distinct sequences"
[ "$below" = true ] || fail "a record's sequence is above its zone's counter"
sync="" : >"$TEST_TMP/fresh"
while :; do
  api_ok "$WRITER_1" records/changes "{\"zoneID\":{\"zoneName\":\"Crash\"},\"resultsLimit\":400${sync:+,\"syncToken\":\"$sync\"}}"
  record_summary | while read -r name tag; do echo "$name $((36#$tag))"; done >>"$TEST_TMP/fresh"
  sync=$(json_last_field syncToken)
  [ "$(json_last_field moreComing)" = true ] || break
done
sort -o "$TEST_TMP/fresh" "$TEST_TMP/fresh"
diff "$TEST_TMP/stored" "$TEST_TMP/fresh" >"$TEST_TMP/fresh.diff" \
  || fail "a fetch from no token differs from the stored records: $(head -n 6 "$TEST_TMP/fresh.diff" | tr '\n' ' ')"
ok "$rows record versions with distinct sequences; a fetch from no token lists exactly the $(wc -l <"$TEST_TMP/stored") stored records"
expect_no_server_errors
