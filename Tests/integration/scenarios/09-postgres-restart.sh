#!/usr/bin/env bash
# PostgreSQL going away under a running server: after `pg_ctl restart -m immediate` /healthz may
# answer 503 TRY_AGAIN_LATER (with Retry-After) for a moment but is back to 200 within 10 s, from
# the same process, never 500; while the database is down /healthz is a prompt 503, and it
# recovers once the database is back.
source "$(dirname "$0")/../lib.sh"

data="$TEST_TMP/data"
start_nimbus --data-dir "$data"
nimbus_pid=$NIMBUS_PID
cluster=$(cluster_directory "$data")
socket=$(socket_directory "$data")

# pg_ctl_cluster ARGS...: pg_ctl on the embedded cluster, as its owner.
pg_ctl_cluster() { run_as_owner "$cluster" "$NIMBUS_TEST_PG_BIN/pg_ctl" "$@" -D "$cluster"; }

# check_healthz_answer WHAT: the last /healthz answer is 200, or a proper 503; anything else fails.
SEEN_503=0
check_healthz_answer() {
  case $HTTP_STATUS in
    200) expect_json_field status ok ;;
    503)
      SEEN_503=$((SEEN_503 + 1))
      expect_error_body TRY_AGAIN_LATER
      [ -n "$(header_value Retry-After)" ] || fail "$1: 503 without Retry-After"
      [[ $(header_value Retry-After) =~ ^[0-9]+$ ]] || fail "$1: Retry-After '$(header_value Retry-After)' is not seconds"
      json_field retryAfter >/dev/null || fail "$1: 503 body without retryAfter: $HTTP_BODY"
      ;;
    *) fail "$1: /healthz answered $HTTP_STATUS (only 200 or 503 are allowed): $HTTP_BODY" ;;
  esac
}

# poll_until_healthy WHAT SECONDS: polls /healthz (three at a time, so every pooled connection
# gets used) until a round is all 200; fails on any other answer than 200/503, or on time.
poll_until_healthy() {
  local deadline=$(( $(now_ms) + $2 * 1000 )) round=0 statuses
  while :; do
    round=$((round + 1))
    statuses=""
    pids=()
    for i in 1 2 3; do
      curl -s --max-time 10 -o "$TEST_TMP/poll-$i.body" -D "$TEST_TMP/poll-$i.headers" -w '%{http_code}' \
        "$NIMBUS_URL/healthz" >"$TEST_TMP/poll-$i.status" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait_exit "$pid" 15 >/dev/null; done
    for i in 1 2 3; do
      HTTP_STATUS=$(cat "$TEST_TMP/poll-$i.status") HTTP_BODY=$(cat "$TEST_TMP/poll-$i.body")
      HTTP_HEADERS=$(tr -d '\r' <"$TEST_TMP/poll-$i.headers")
      [ -n "$HTTP_STATUS" ] && [ "$HTTP_STATUS" != 000 ] || fail "$1: /healthz got no answer (round $round)"
      check_healthz_answer "$1"
      statuses+="$HTTP_STATUS "
    done
    [ "$statuses" = "200 200 200 " ] && break
    [ "$(now_ms)" -lt "$deadline" ] || fail "$1: /healthz not back to 200 within $2 s (last round: $statuses)"
    sleep 0.2
  done
  POLL_ROUNDS=$round
}

note "warm the pool"
pids=()
for i in $(seq 1 12); do curl -s -o /dev/null --max-time 10 "$NIMBUS_URL/healthz" & pids+=($!); done
for pid in "${pids[@]}"; do wait_exit "$pid" 15 >/dev/null; done
request GET /healthz
expect_status 200 "GET /healthz before the restart"
request GET /metrics
pooled=$(printf '%s\n' "$HTTP_BODY" | grep '^nimbus_db_pool_idle ' | sed 's/.* //')
note "pool before the restart: ${pooled:-?} idle connections"
old_postmaster=$(postmaster_pid "$data")

note "pg_ctl restart -m immediate under the running server"
pg_ctl_cluster restart -m immediate -w -t 60 >"$TEST_TMP/pg_ctl.out" 2>&1 || fail "pg_ctl restart failed: $(cat "$TEST_TMP/pg_ctl.out")"
[ "$(postmaster_pid "$data")" != "$old_postmaster" ] || fail "the postmaster did not change; the restart did not happen"
started=$(now_ms)
poll_until_healthy "after pg_ctl restart" 10
ok "/healthz back to 200 after $(( $(now_ms) - started )) ms ($POLL_ROUNDS rounds of 3, $SEEN_503 answers 503)"
[ "$NIMBUS_PID" = "$nimbus_pid" ] && process_alive "$nimbus_pid" || fail "nimbus is not the same running process"
for i in $(seq 1 10); do
  request GET /healthz
  expect_status 200 "GET /healthz #$i after recovery"
done
ok "the same nimbus (pid $nimbus_pid) answers 10 more /healthz with 200"

note "the database stopped for a while"
pg_ctl_cluster stop -m immediate -w -t 60 >"$TEST_TMP/pg_ctl.out" 2>&1 || fail "pg_ctl stop failed: $(cat "$TEST_TMP/pg_ctl.out")"
start=$(now_ms)
request GET /healthz
took=$(( $(now_ms) - start ))
expect_status 503 "GET /healthz with the database stopped"
check_healthz_answer "database stopped"
[ "$took" -le 11000 ] || fail "/healthz took $took ms to report the database down"
ok "database down: 503 TRY_AGAIN_LATER with Retry-After $(header_value Retry-After), after $took ms"
request GET /limits
expect_status 200 "GET /limits with the database stopped (needs no database)"
process_alive "$nimbus_pid" || fail "nimbus died while its database was down"

# Start it as nimbus does: socket only, in <data>/run.
pg_ctl_cluster start -w -t 60 -l "$socket/postgres-restart.log" \
  -o "-c listen_addresses='' -c unix_socket_directories='$socket' -c unix_socket_permissions=0700" \
  >"$TEST_TMP/pg_ctl.out" 2>&1 || fail "pg_ctl start failed: $(cat "$TEST_TMP/pg_ctl.out") $(tail -n 5 "$socket/postgres-restart.log")"
started=$(now_ms)
poll_until_healthy "after the database came back" 10
ok "/healthz back to 200 $(( $(now_ms) - started )) ms after the database came back"

grep -E '^(error|critical)' "$NIMBUS_LOG" | grep -v -i 'database' && fail "nimbus logged errors other than database ones"
stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"
ok "nimbus stopped cleanly after the database outages"
