#!/usr/bin/env bash
# Failover with real parts (issue 33): deploy/ha/ as shipped (etcd, two PostgreSQL 15 nodes under
# Patroni with a synchronous standby, HAProxy routing to the primary by Patroni's /primary check;
# Tests/integration/failover.sh), two `nimbus serve` instances on HAProxy's port. Under the
# no-missed-change checker's writers and readers through both instances, a probe writer and 100
# long-polls parked on a quiet zone, the leader's postmaster is killed (kill -9):
#   - Patroni promotes the synchronous standby, and a write is acknowledged again within 30 s of
#     the kill (same nimbus processes: their pools and LISTEN connections reconnect through HAProxy);
#   - every answer meanwhile is 200 or 503 TRY_AGAIN_LATER with Retry-After, none slower than 15 s;
#   - one write into the quiet zone after the failover reaches all 100 parked waiters;
#   - the checker finds 0 acknowledged writes lost, 0 changes missed by any reader, no token going
#     backwards (a write answered 503 may or may not have committed: readers must hold what the
#     server ends with).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../proxies.sh"
source "$(dirname "$0")/../failover.sh"

failover_setup
failover_load "${FAILOVER_SECONDS:-35}"
sleep 5
failover_event kill
failover_finish
