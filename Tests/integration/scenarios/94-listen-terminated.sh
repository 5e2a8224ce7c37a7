#!/usr/bin/env bash
# pg_terminate_backend of the LISTEN connections (issue 7, item 5). Two instances A and B share a
# database; waiters are parked on B (which learns of A's writes only through LISTEN/NOTIFY) and on
# A. Three rounds: both instances' LISTEN backends are terminated, then a record is written
# through A — at once in rounds 1 and 3 (the NOTIFY may go out before B listens again: B must
# re-read on reconnect), after B's listener is back in round 2 (the NOTIFY path). Every waiter
# must get the record within 10 s; each instance ends with exactly one LISTEN backend, and both
# log the reconnection. (Scenario 41 covers the deterministic case: connections refused while
# the write's NOTIFY goes out.)
source "$(dirname "$0")/../lib.sh"

start_store_server
A_URL=$NIMBUS_URL A_PID=$NIMBUS_PID A_LOG=$NIMBUS_LOG
start_nimbus --database-url "$NIMBUS_DB_URL"
B_URL=$NIMBUS_URL B_PID=$NIMBUS_PID B_LOG=$NIMBUS_LOG
nimbus_admin user add alice >/dev/null
issue_token TOKEN alice writer
issue_token WAITER alice watcher
NIMBUS_URL=$A_URL
api_ok "$TOKEN" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Live"}}}]}'
api_ok "$TOKEN" records/modify '{"zoneID":{"zoneName":"Live"},"operations":[{"operationType":"create","record":{"recordName":"r0","recordType":"Item","fields":{"n":{"value":0}}}}]}'

# listeners: LISTEN backends of this database.
listeners() {
  psql_db "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'nimbus-listener'"
}
for base in "$A_URL" "$B_URL"; do
  wait_metric nimbus_listener_connected 1 10 "$base" || fail "$base: LISTEN connection not up"
done
[ "$(listeners)" = 2 ] || fail "expected 2 LISTEN backends, found $(listeners)"

for round in 1 2 3; do
  api_ok "$WAITER" records/changes '{"zoneID":{"zoneName":"Live"}}'
  token=$(json_last_field syncToken)
  body="{\"zoneID\":{\"zoneName\":\"Live\"},\"syncToken\":\"$token\",\"wait\":40}"
  for i in 1 2 3; do lp_start "b$round-$i" "$WAITER" records/changes "$body" "$B_URL"; done
  lp_start "a$round" "$WAITER" records/changes "$body" "$A_URL"
  wait_metric nimbus_longpoll_waiters 3 10 "$B_URL" || fail "round $round: B has '$LP_METRIC' waiters, expected 3"
  wait_metric nimbus_longpoll_waiters 1 10 "$A_URL" || fail "round $round: A has '$LP_METRIC' waiters, expected 1"

  relistened=$(grep -c 'LISTEN connection re-established' "$B_LOG")
  killed=$(psql_db "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'nimbus-listener'")
  [ "$killed" = 2 ] || fail "round $round: terminated $killed LISTEN backends, expected 2"
  if [ "$round" = 2 ]; then
    # Wait until B has noticed and listens again, then write: the plain NOTIFY path.
    deadline=$(( $(now_ms) + 15000 ))
    until [ "$(grep -c 'LISTEN connection re-established' "$B_LOG")" -gt "$relistened" ]; do
      [ "$(now_ms)" -lt "$deadline" ] || fail "round $round: B did not log a re-established LISTEN connection within 15 s"
      sleep 0.05
    done
    how="after B listened again"
  else
    how="right after the termination"
  fi
  NIMBUS_URL=$A_URL
  api_ok "$TOKEN" records/modify "{\"zoneID\":{\"zoneName\":\"Live\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"r$round\",\"recordType\":\"Item\",\"fields\":{\"n\":{\"value\":$round}}}}]}"
  written=$(now_ms)
  for name in "b$round-1" "b$round-2" "b$round-3" "a$round"; do
    lp_finish "$name" 15
    [ "$LP_STATUS" = 200 ] || fail "round $round: waiter $name answered $LP_STATUS: ${LP_BODY:0:200}"
    [ "$(record_summary "$LP_BODY" | cut -d' ' -f1)" = "r$round" ] || fail "round $round: waiter $name did not get r$round: ${LP_BODY:0:300}"
    [ $(( $(now_ms) - written )) -le 10000 ] || fail "round $round: waiter $name took more than 10 s"
  done
  ok "round $round: LISTEN backends terminated, r$round written $how; all 4 waiters (3 on B) got it within $(( $(now_ms) - written )) ms"
done

for base in "$A_URL" "$B_URL"; do
  wait_metric nimbus_listener_connected 1 15 "$base" || fail "$base: LISTEN connection not back"
done
deadline=$(( $(now_ms) + 15000 ))
until [ "$(listeners)" = 2 ]; do
  [ "$(now_ms)" -lt "$deadline" ] || fail "expected 2 LISTEN backends at the end, found $(listeners)"
  sleep 0.1
done
for log in "$A_LOG" "$B_LOG"; do
  grep -q 'LISTEN connection re-established' "$log" || fail "$log does not mention the re-established LISTEN connection"
done
ok "one LISTEN backend per instance after 3 terminations; both logged the reconnection"
expect_no_server_errors
NIMBUS_URL=$B_URL NIMBUS_LOG=$B_LOG expect_no_server_errors
