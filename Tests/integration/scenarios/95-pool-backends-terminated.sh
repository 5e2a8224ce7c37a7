#!/usr/bin/env bash
# Pool connections killed under write load (issue 7, item 5): four writers send atomic batches (5
# creates, or 4 creates and a forceDelete, which takes the locked transaction path) while a killer
# runs pg_terminate_backend on a busy pool backend of the server every 150-400 ms for 8 s (every
# writing transaction sleeps 0..40 ms before COMMIT, so many die mid-transaction). Requirements:
#   - every answer is 200, or 503 TRY_AGAIN_LATER with Retry-After (never a 500);
#   - a writer retries an unanswered batch as is; every acknowledged record is stored with its tag
#     and no batch is stored in part;
#   - the server recovers by itself: afterwards a write and /healthz answer 200 and the pool holds
#     no broken connection (10 more writes in a row succeed).
source "$(dirname "$0")/../lib.sh"

WRITERS=4 KILL_SECONDS=8
ERRORS="$TEST_TMP/errors" STOP="$TEST_TMP/stop"
: >"$ERRORS"

start_store_server
"$NIMBUS_TEST_PG_BIN/psql" "$NIMBUS_DB_URL" -X -q -v ON_ERROR_STOP=1 -v max_ms=40 -f "$REPO_DIR/Tests/soak/commit-delay.sql" \
  >"$TEST_TMP/delay.out" 2>&1 || fail "installing the commit delay failed: $(cat "$TEST_TMP/delay.out")"
nimbus_admin user add alice >/dev/null
for ((k = 1; k <= WRITERS; k++)); do issue_token "WRITER_$k" alice "writer-$k"; done
api_ok "$WRITER_1" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Cut"}}}]}'
api_ok "$WRITER_1" records/modify '{"zoneID":{"zoneName":"Cut"},"operations":[{"operationType":"create","record":{"recordName":"seed","recordType":"Item","fields":{"batch":{"value":"seed"},"i":{"value":0}}}}]}'

# writer K TOKEN: batches until STOP; `NAME TAG` per acknowledged record to acks-K, and a line
# `STATUS RETRY_AFTER CODE` per answer to answers-K.
writer() {
  local k=$1 token=$2 n=0 kind size ops i out status body retry code headers=$TEST_TMP/h-$1 bodyfile=$TEST_TMP/b-$1
  while [ ! -e "$STOP" ]; do
    n=$((n + 1))
    kind=a size=5
    [ $((n % 3)) -eq 0 ] && kind=l size=4
    ops=""
    for ((i = 0; i < size; i++)); do
      ops+="${ops:+,}{\"operationType\":\"create\",\"record\":{\"recordName\":\"$kind-$k-$n-$i\",\"recordType\":\"Item\",\"fields\":{\"batch\":{\"value\":\"$kind-$k-$n\"},\"i\":{\"value\":$i}}}}"
    done
    [ "$kind" = l ] && ops+=",{\"operationType\":\"forceDelete\",\"record\":{\"recordName\":\"gone-$k-$n\"}}"
    body="{\"zoneID\":{\"zoneName\":\"Cut\"},\"atomic\":true,\"operations\":[$ops]}"
    for ((attempt = 1; attempt <= 100; attempt++)); do
      status=$(curl -s --max-time 15 -o "$bodyfile" -D "$headers" -X POST -H "Authorization: Bearer $token" \
        -H 'Content-Type: application/json' --data-binary "$body" -w '%{http_code}' "$NIMBUS_URL$(api_path records/modify)")
      out=$(cat "$bodyfile" 2>/dev/null)
      retry=$(header_value Retry-After "$(cat "$headers" 2>/dev/null)")
      code=-
      [ "$status" = 200 ] || code=$(json_field serverErrorCode "$out") || code=-
      echo "$status ${retry:--} $code" >>"$TEST_TMP/answers-$k"
      # One JSON read per answer (each is a process): the writers must keep the pool busy.
      if [ "$status" = 200 ]; then
        items=$(json_read rows recordName recordName recordChangeTag=- serverErrorCode=ok <<<"$out") || items=""
        if [ -z "$items" ] || contains "$items" -q -v ' ok$'; then
          printf 'writer %d batch %s-%d: %s\n' "$k" "$kind" "$n" "${out:0:300}" >>"$ERRORS"
        else
          while read -r name tag _; do [ "$tag" = - ] || echo "$name $tag"; done <<<"$items" >>"$TEST_TMP/acks-$k"
        fi
        break
      fi
      sleep 0.05
    done
  done
}

pids=()
for ((k = 1; k <= WRITERS; k++)); do
  token_var=WRITER_$k
  : >"$TEST_TMP/acks-$k" >"$TEST_TMP/answers-$k"
  writer "$k" "${!token_var}" &
  pids+=($!)
  track_pid "$!"
done

killed=0
deadline=$(( $(now_ms) + KILL_SECONDS * 1000 ))
while [ "$(now_ms)" -lt "$deadline" ]; do
  sleep "0.$((15 + RANDOM % 25))"
  n=$(psql_db "SELECT count(pg_terminate_backend(pid)) FROM (
                 SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                   AND application_name <> 'nimbus-listener' AND (backend_xid IS NOT NULL OR state = 'active')
                 ORDER BY random() LIMIT 1) busy")
  killed=$((killed + n))
done
touch "$STOP"
for pid in "${pids[@]}"; do
  wait_exit "$pid" 60 || [ $? -ne 124 ] || fail "writer pid $pid did not finish within 60 s"
done
note "$killed busy pool backends terminated in ${KILL_SECONDS}s"
[ "$killed" -ge 5 ] || fail "only $killed backends were terminated: the run proves little"
[ -s "$ERRORS" ] && { head -n 10 "$ERRORS" >&2; fail "$(wc -l <"$ERRORS") batches failed with item errors (above)"; }

cat "$TEST_TMP"/answers-* >"$TEST_TMP/answers"
others=$(awk '$1 != 200 && $1 != 503' "$TEST_TMP/answers" | sort | uniq -c | head -n 5)
[ -z "$others" ] || fail "answers other than 200 and 503: $others"
bad503=$(awk '$1 == 503 && ($2 == "-" || $3 != "TRY_AGAIN_LATER")' "$TEST_TMP/answers" | sort | uniq -c | head -n 3)
[ -z "$bad503" ] || fail "503 answers without Retry-After or TRY_AGAIN_LATER: $bad503"
n200=$(awk '$1 == 200' "$TEST_TMP/answers" | wc -l)
n503=$(awk '$1 == 503' "$TEST_TMP/answers" | wc -l)
ok "$((n200 + n503)) answers: $n200 200 and $n503 503 TRY_AGAIN_LATER with Retry-After, no other status"

sort -u "$TEST_TMP"/acks-* | while read -r name tag; do echo "$name $((36#$tag))"; done | sort >"$TEST_TMP/acked"   # tags are base 36 of the sequence
psql_db "SELECT record_name || ' ' || r.change_seq FROM records r JOIN zones z ON z.id = r.zone_id
         WHERE z.zone_name = 'Cut' AND NOT r.deleted ORDER BY 1" | sort >"$TEST_TMP/stored"
missing=$(comm -23 "$TEST_TMP/acked" "$TEST_TMP/stored" | wc -l)
[ "$missing" -eq 0 ] || fail "$missing acknowledged records are not stored as acknowledged: $(comm -23 "$TEST_TMP/acked" "$TEST_TMP/stored" | head -n 5 | tr '\n' ' ')"
half=$(psql_db "SELECT b || ':' || count(*) FROM (SELECT regexp_replace(record_name, '-[0-9]+\$', '') AS b FROM records
                WHERE record_name <> 'seed' AND record_name NOT LIKE 'gone-%') x
                GROUP BY b HAVING count(*) <> CASE WHEN b LIKE 'a-%' THEN 5 ELSE 4 END")
[ -z "$half" ] || fail "half batches stored: $(printf '%s' "$half" | head -n 5 | tr '\n' ' ')"
ok "$(wc -l <"$TEST_TMP/acked") acknowledged records stored with their tags; no batch stored in part"

for i in $(seq 1 10); do
  api_ok "$WRITER_1" records/modify "{\"zoneID\":{\"zoneName\":\"Cut\"},\"operations\":[{\"operationType\":\"forceUpdate\",\"record\":{\"recordName\":\"after-$i\",\"recordType\":\"Item\",\"fields\":{\"i\":{\"value\":$i}}}}]}"
done
request GET /healthz
expect_status 200 "/healthz after the terminations"
logged=$(grep -a -i 'internal error\|INTERNAL_ERROR' "$NIMBUS_LOG" | head -n 3)
[ -z "$logged" ] || fail "the server logged internal errors: $logged"
ok "recovered by itself: 10 writes in a row and /healthz answer 200; no internal error logged"
