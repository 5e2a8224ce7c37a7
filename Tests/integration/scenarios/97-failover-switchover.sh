#!/usr/bin/env bash
# Planned switchover (issue 33): the load of scenario 96 (Tests/integration/failover.sh) across
# `patronictl switchover` from the leader to the synchronous standby: a new leader, a write
# acknowledged again within 30 s, all 100 parked waiters reached by the next write, the checker's
# 0 lost and 0 missed, and nothing but 200 or 503 TRY_AGAIN_LATER answered. Meanwhile `nimbus
# migrate` pointed straight at the standby waits for it to become the primary, then succeeds.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../proxies.sh"
source "$(dirname "$0")/../failover.sh"

failover_setup
failover_load "${FAILOVER_SECONDS:-35}"
# Migrations run on the primary only: `nimbus migrate` pointed straight at the standby waits
# (it must not fail, nor write there) until the switchover makes that node the primary.
standby=node2 standby_port=$HA_PG2_PORT
[ "$(ha_leader)" = node2 ] && standby=node1 standby_port=$HA_PG1_PORT
"$NIMBUS_BIN" migrate --database-url "postgresql://nimbus:change-me-nimbus@127.0.0.1:$standby_port/nimbus" >"$TEST_TMP/migrate.out" 2>&1 &
MIGRATE_PID=$!
track_pid "$MIGRATE_PID"
sleep 5
process_alive "$MIGRATE_PID" || fail "nimbus migrate against the standby $standby did not wait: $(tail -n 5 "$TEST_TMP/migrate.out")"
grep -q 'cannot take migrations now' "$TEST_TMP/migrate.out" || fail "nimbus migrate against the standby does not say what it waits for: $(tail -n 5 "$TEST_TMP/migrate.out")"
ok "nimbus migrate pointed at the standby $standby waits: $(grep -m1 -o 'cannot take migrations now[^"]*' "$TEST_TMP/migrate.out")"
failover_event switchover
[ "$(ha_leader)" = "$standby" ] || fail "the switchover did not make $standby the leader"
wait_exit "$MIGRATE_PID" 30
status=$?
[ "$status" = 0 ] && grep -q 'migrations are up to date' "$TEST_TMP/migrate.out" \
  || fail "nimbus migrate did not finish once $standby was the primary (status $status): $(tail -n 5 "$TEST_TMP/migrate.out")"
ok "nimbus migrate finished (exit 0) once $standby was the primary"
failover_finish
