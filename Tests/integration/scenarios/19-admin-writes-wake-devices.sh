#!/usr/bin/env bash
# Admin commands that write beside a running server wake its waiting devices (hardening 6i): a
# device waiting on zones/changes is answered within seconds of `nimbus import` into its user
# (three imports, three users: the notices were lost in 9 of 13 tries when the command exited
# before sending them) and of `nimbus restore --force` into the server's database, not when its
# 30 s wait ends.
source "$(dirname "$0")/../lib.sh"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token MAC alice mac
api_ok "$MAC" records/modify '{"operations":[{"operationType":"create","record":{"recordName":"n1","recordType":"Note","fields":{"text":{"value":"one"}}}}]}'
nimbus_admin export --user alice --output "$TEST_TMP/export" >/dev/null

# expect_woken_by NAME WHAT COMMAND...: runs COMMAND while NAME waits; NAME must answer 200 within
# 5 s of the command's end.
expect_woken_by() {
  local name=$1 what=$2; shift 2
  "$@" >"$TEST_TMP/command.out" 2>&1 || fail "$what: the command failed: $(cat "$TEST_TMP/command.out")"
  local ended_us=$(now_us)
  lp_finish "$name" 40
  [ "$LP_STATUS" = 200 ] || fail "$what: the waiting device got $LP_STATUS ${LP_BODY:0:300}"
  local after=$(( (LP_DONE_US - ended_us) / 1000 ))
  [ "$after" -lt 5000 ] || fail "$what: the waiting device was answered ${after} ms after the command ended (its wait is 30 s)"
  ok "$what: the waiting device was answered $after ms after the command ended"
}

for user in bob carol dave; do
  nimbus_admin user add "$user" >/dev/null
  issue_token DEVICE "$user" phone
  api_ok "$DEVICE" zones/changes '{}'
  lp_start "$user" "$DEVICE" zones/changes "{\"syncToken\":\"$(json_last_field syncToken)\",\"wait\":30}"
  wait_metric nimbus_longpoll_waiters 1 5 || fail "$user's request is not parked (waiters: $LP_METRIC)"
  expect_woken_by "$user" "import into $user" "$NIMBUS_BIN" import "$TEST_TMP/export" --user "$user" --database-url "$NIMBUS_DB_URL"
done

nimbus_admin backup --output "$TEST_TMP/nimbus.dump" >/dev/null
api_ok "$DEVICE" zones/changes '{}'
lp_start restore "$DEVICE" zones/changes "{\"syncToken\":\"$(json_last_field syncToken)\",\"wait\":30}"
wait_metric nimbus_longpoll_waiters 1 5 || fail "the request is not parked (waiters: $LP_METRIC)"
expect_woken_by restore "restore --force under the running server" \
  "$NIMBUS_BIN" restore "$TEST_TMP/nimbus.dump" --force --database-url "$NIMBUS_DB_URL"
finish_scenario
