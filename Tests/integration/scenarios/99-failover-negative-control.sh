#!/usr/bin/env bash
# Negative control of the failover scenarios (issue 33; documented, it passes when the loss shows):
# deploy/ha/ with its one change for this run, `synchronous_mode: false` (HA_SYNCHRONOUS_MODE=false:
# asynchronous replication, and `maximum_lag_on_failover` raised so Patroni promotes the standby
# however far behind it is), and a standby held behind: the primary's WAL sender is stopped
# (SIGSTOP) for 2 s while the checker writes, then the primary's postmaster and that sender are
# killed (kill -9). Patroni promotes the standby, which never received the last commits the primary
# had acknowledged. The checker (nmcheck -U, as in 96-98) must report what that costs: acknowledged
# writes lost (`lost` > 0) and readers holding versions the server no longer has (`missed`,
# `regressed` or `token`). If it reported nothing, scenarios 96-98 would prove nothing.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../proxies.sh"
export HA_SYNCHRONOUS_MODE=false
source "$(dirname "$0")/../failover.sh"

failover_setup
leader=$(ha_leader)
standby=node2
[ "$leader" = node2 ] && standby=node1
timeout 150 "$TEST_TMP/nmcheck" -U -p "$A_PORT,$B_PORT" -d "$(api_path x | sed 's#/x$##')" \
  -t "$TEST_TMP/checker-tokens" -w 4 -r 4 -s 25 -z Checker >"$TEST_TMP/nmcheck.out" 2>"$TEST_TMP/nmcheck.err" &
CHECK_PID=$!
track_pid "$CHECK_PID"
sleep 6
sender=""
for pid in $(children_of "$(ha_postmaster "$leader")"); do
  grep -q walsender "/proc/$pid/cmdline" 2>/dev/null && sender=$pid
done
[ -n "$sender" ] || fail "no WAL sender under $leader's postmaster"
kill -STOP "$sender"
note "WAL sender $sender of $leader stopped; the checker's writes go on, acknowledged by $leader alone"
sleep 2
kill -KILL "$(ha_postmaster "$leader")" "$sender"
note "kill -9 of $leader's postmaster and of its stopped WAL sender"
new=$(_ha_wait_new_leader "$leader" 60) || fail "Patroni promoted no standby within 60 s: $(bash "$HA_SCRIPT" status "$HA_DIR" 2>&1 | tr '\n' ' ')"
ok "$new promoted after the kill"
wait_exit "$CHECK_PID" 140
check_status=$?
sed 's/^/  /' "$TEST_TMP/nmcheck.out" | grep -v 'nmcheck: reader'
lost=$(sed -n 's/^nmcheck: lost \([0-9]*\),.*/\1/p' "$TEST_TMP/nmcheck.out")
[ "$check_status" = 1 ] || fail "the checker exited $check_status; it must fail (1) when acknowledged writes are lost"
[ "${lost:-0}" -gt 0 ] || fail "the checker failed, but reports no lost write: $(grep '^RESULT' "$TEST_TMP/nmcheck.out")"
ok "negative control: asynchronous standby promoted, the checker reports it: $(grep '^nmcheck: lost' "$TEST_TMP/nmcheck.out" | sed 's/^nmcheck: //')"
