#!/usr/bin/env bash
# Enrollment failure limits hold for the whole server (docs/api.md "Devices"), against bursts:
# two instances on one database, wrong codes sent all at once with `curl &`, alternating between
# the instances.
#
# - Per address: 3 × PER_ADDRESS wrong codes from 127.0.0.2 at once → exactly PER_ADDRESS 401s,
#   the rest 429 THROTTLED with a Retry-After of 1..60 s equal to the body's retryAfter; then a
#   correct code from 127.0.0.2 is 429 on both instances, and from 127.0.0.3 it enrolls.
# - Server-wide: one wrong code from each of 30 other addresses at once → exactly the failures
#   left under OVERALL are 401, the rest 429 naming enrollFailuresPerMinute; then a correct code
#   from a fresh address is 429 on both instances.
# - enrollment_failures holds exactly OVERALL rows: the successful enrollment was not counted.
source "$(dirname "$0")/../lib.sh"

PER_ADDRESS=5 OVERALL=12
limits=(--enroll-failures-per-minute-per-address "$PER_ADDRESS" --enroll-failures-per-minute "$OVERALL")
start_store_server "${limits[@]}"
A_URL=$NIMBUS_URL
start_nimbus --database-url "$NIMBUS_DB_URL" "${limits[@]}"
B_URL=$NIMBUS_URL
NIMBUS_URL=$A_URL
nimbus_admin user add alice >/dev/null
code() { nimbus_admin device pair alice --no-qr | sed -n 's/^code: //p'; }
GOOD=$(code) SPARE=$(code)

# enroll BASE ADDRESS CODE NAME OUT: one enrollment from ADDRESS; OUT.status gets the status,
# OUT.body the body and OUT.headers the headers.
enroll() {
  curl -s --max-time 20 --interface "$2" -o "$5.body" -D "$5.headers" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' --data-binary "{\"code\":\"$3\",\"deviceName\":\"$4\"}" "$1/devices/enroll" >"$5.status"
}
# burst NAME ADDRESS...: one wrong code per ADDRESS, all at once, alternating between A and B;
# sets BURST to the count of each status ("401:5 429:10"); the answers are in $TEST_TMP/NAME/.
burst() {
  local name=$1 index=0 pids=() address base
  shift
  mkdir -p "$TEST_TMP/$name"
  for address in "$@"; do
    base=$A_URL
    [ $((index % 2)) = 1 ] && base=$B_URL
    enroll "$base" "$address" ZZZZ-ZZZZ-ZZ x "$TEST_TMP/$name/$index" &
    pids+=($!)
    index=$((index + 1))
  done
  wait "${pids[@]}"
  BURST=$(for out in "$TEST_TMP/$name"/*.status; do cat "$out"; echo; done | sort | uniq -c | awk '{printf "%s%s:%s", sep, $2, $1; sep=" "}')
}
# expect_refused_everywhere ADDRESS CODE LIMIT: a correct code from ADDRESS is 429 naming LIMIT on A and B.
expect_refused_everywhere() {
  local base
  for base in "$A_URL" "$B_URL"; do
    enroll "$base" "$1" "$2" phone "$TEST_TMP/refused"
    [ "$(cat "$TEST_TMP/refused.status")" = 429 ] || fail "a correct code from $1 on $base: $(cat "$TEST_TMP/refused.status") $(cat "$TEST_TMP/refused.body")"
    grep -q "$3 is" "$TEST_TMP/refused.body" || fail "the 429 on $base does not name $3: $(cat "$TEST_TMP/refused.body")"
  done
}

note "per address: $((3 * PER_ADDRESS)) wrong codes from 127.0.0.2 at once, over both instances"
addresses=()
for _ in $(seq 1 $((3 * PER_ADDRESS))); do addresses+=(127.0.0.2); done
burst per-address "${addresses[@]}"
[ "$BURST" = "401:$PER_ADDRESS 429:$((2 * PER_ADDRESS))" ] || fail "the burst from one address answered $BURST"
for out in "$TEST_TMP"/per-address/*.status; do
  [ "$(cat "$out")" = 429 ] || continue
  HTTP_BODY=$(cat "${out%.status}.body")
  expect_error_body THROTTLED
  retry=$(header_value Retry-After "$(cat "${out%.status}.headers")")
  (( retry >= 1 && retry <= 60 )) || fail "Retry-After '$retry' is not 1..60"
  expect_json_field retryAfter "$retry"
done
expect_refused_everywhere 127.0.0.2 "$GOOD" enrollFailuresPerMinutePerAddress
enroll "$B_URL" 127.0.0.3 "$GOOD" phone "$TEST_TMP/other"
[ "$(cat "$TEST_TMP/other.status")" = 200 ] || fail "a correct code from 127.0.0.3 on B: $(cat "$TEST_TMP/other.status") $(cat "$TEST_TMP/other.body")"
ok "one address, $((3 * PER_ADDRESS)) at once over two instances: $BURST (Retry-After 1..60 = retryAfter); its correct code 429 on A and B; 127.0.0.3 enrolls"

note "server-wide: one wrong code from each of 30 addresses at once, over both instances"
addresses=()
for i in $(seq 10 39); do addresses+=("127.0.0.$i"); done
burst server "${addresses[@]}"
left=$((OVERALL - PER_ADDRESS))
[ "$BURST" = "401:$left 429:$((30 - left))" ] || fail "the burst from 30 addresses answered $BURST, expected $left failures let through"
for out in "$TEST_TMP"/server/*.status; do
  [ "$(cat "$out")" = 429 ] || continue
  grep -q 'enrollFailuresPerMinute is' "${out%.status}.body" || fail "a 429 of the burst does not name the server-wide limit: $(cat "${out%.status}.body")"
done
expect_refused_everywhere 127.0.0.99 "$SPARE" enrollFailuresPerMinute
[ "$(psql_db "SELECT count(*) FROM enrollment_failures")" = "$OVERALL" ] || fail "enrollment_failures has $(psql_db "SELECT count(*) FROM enrollment_failures") rows, expected $OVERALL"
ok "30 addresses at once over two instances: $BURST; a correct code from a fresh address 429 on A and B; $OVERALL failure rows"
expect_no_server_errors
