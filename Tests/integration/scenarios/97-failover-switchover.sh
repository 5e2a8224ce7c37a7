#!/usr/bin/env bash
# Planned switchover (issue 33): the load of scenario 96 (Tests/integration/failover.sh) across
# `patronictl switchover` from the leader to the synchronous standby: a new leader, a write
# acknowledged again within 30 s, all 100 parked waiters reached by the next write, the checker's
# 0 lost and 0 missed, and nothing but 200 or 503 TRY_AGAIN_LATER answered.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../proxies.sh"
source "$(dirname "$0")/../failover.sh"

failover_setup
failover_load "${FAILOVER_SECONDS:-35}"
sleep 5
failover_event switchover
failover_finish
