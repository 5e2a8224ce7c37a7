#!/usr/bin/env bash
# Slow-loris, CI-sized (issue 7, security; bench/slowloris.sh is the 1,000-connection version with
# slowhttptest): 100 connections trickle header lines every 0.5 s and never finish their heads;
# half of them first stay silent for 1.5 s. With --header-timeout-seconds 2:
# - every attack connection is closed by the server within the header timeout + 1 s of its
#   connect (also those that waited before their first byte: the header clock runs from accept),
#   with a 408 for those that sent something;
# - real clients meanwhile get their answers (/healthz and an authenticated database operation).
# The attacker is Tests/integration/slowloris.c, compiled here with cc or clang.
source "$(dirname "$0")/../lib.sh"

TIMEOUT_S=2 COUNT=100
compiler=$(command -v cc || command -v clang || command -v gcc) || fail "no C compiler (cc, clang or gcc)"
"$compiler" -O2 -o "$TEST_TMP/slowloris" "$IT_DIR/slowloris.c" || fail "compiling slowloris.c failed"

start_store_server --header-timeout-seconds "$TIMEOUT_S" --requests-per-second-per-token 0
nimbus_admin user add alice >/dev/null
issue_token ALICE alice mac

note "$COUNT slow-header connections, half of them silent for 1.5 s first"
"$TEST_TMP/slowloris" "$NIMBUS_PORT" "$COUNT" 15 500 1500 >"$TEST_TMP/attack.out" 2>"$TEST_TMP/attack.err" &
attacker=$!
track_pid "$attacker"
sleep 0.3

# Real clients during the attack: every answer 200, each within 5 s (only a hang fails).
latencies=()
for i in $(seq 1 15); do
  t=$(curl -s --max-time 5 -o /dev/null -w '%{http_code} %{time_total}' "$NIMBUS_URL/healthz") || fail "GET /healthz $i during the attack failed: $t"
  [ "${t%% *}" = 200 ] || fail "GET /healthz $i during the attack: $t"
  latencies+=("${t#* }")
  t=$(curl -s --max-time 5 -o /dev/null -w '%{http_code} %{time_total}' -H "Authorization: Bearer $ALICE" "$NIMBUS_URL$(api_path users/current)") \
    || fail "users/current $i during the attack failed: $t"
  [ "${t%% *}" = 200 ] || fail "users/current $i during the attack: $t"
  latencies+=("${t#* }")
  sleep 0.05
done
sorted=$(printf '%s\n' "${latencies[@]}" | sort -n)
p50=$(sed -n "$(( (${#latencies[@]} + 1) / 2 ))p" <<<"$sorted") max=$(tail -n 1 <<<"$sorted")
ok "${#latencies[@]} real requests during the attack: all 200, p50 ${p50}s, max ${max}s"

wait_exit "$attacker" 25
status=$?
[ "$status" -eq 0 ] || fail "slowloris exited with $status: $(cat "$TEST_TMP/attack.err")"
read -r _ opened _ failed _ closed _ answered _ open _ max_ms _ p50_ms _ p99_ms <"$TEST_TMP/attack.out" \
  || fail "no result line from slowloris: $(cat "$TEST_TMP/attack.out" "$TEST_TMP/attack.err")"
echo "slowloris: $opened slow connections (header timeout ${TIMEOUT_S} s): $closed closed by the server, $answered answered 408, $open left open; lifetime p50 ${p50_ms} ms, p99 ${p99_ms} ms, max ${max_ms} ms"
[ "$opened" = "$COUNT" ] && [ "$failed" = 0 ] || fail "only $opened of $COUNT connections opened ($failed failed): $(cat "$TEST_TMP/attack.err")"
[ "$open" = 0 ] && [ "$closed" = "$COUNT" ] || fail "$open attack connections were still open after 15 s"
[ "$max_ms" -le $(( TIMEOUT_S * 1000 + 1000 )) ] || fail "an attack connection lived ${max_ms} ms, more than the header timeout + 1 s"
[ "$answered" = "$COUNT" ] || fail "only $answered of $COUNT slow connections got a 408 before the close"
ok "every attack connection was closed within the header timeout + 1 s (max ${max_ms} ms), each with a 408"

healthy "after the attack"
request GET /metrics
expect_no_server_errors
