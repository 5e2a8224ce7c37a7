#!/usr/bin/env bash
# The old primary comes back (issue 33): under the load of scenario 96 (Tests/integration/failover.sh)
# the leader's postmaster is killed; Patroni promotes the standby and brings the old primary back
# as the synchronous standby (pg_rewind, or a re-clone); then the new leader's postmaster is killed
# too, and the failover back to the first node passes the same checks: a write acknowledged within
# 30 s each time, all 100 parked waiters reached each time, the checker's 0 lost and 0 missed
# across both.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../proxies.sh"
source "$(dirname "$0")/../failover.sh"

failover_setup
first=$(ha_leader)
failover_load "${FAILOVER_SECONDS:-60}"
sleep 3
failover_event kill
failover_rejoin "$first"
failover_event kill
[ "$(ha_leader)" = "$first" ] || fail "the second failover did not go back to $first (leader: $(ha_leader))"
ok "the second failover went back to $first"
failover_finish
