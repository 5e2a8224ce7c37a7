#!/usr/bin/env bash
# The embedded database: a fresh --data-dir is initialized and served; a second server on the
# same directory fails fast naming the data directory while the first keeps serving; SIGTERM
# stops the cluster; after `kill -9` of nimbus the next start takes over the leftover cluster,
# keeps the committed data, and serves.
source "$(dirname "$0")/../lib.sh"

data="$TEST_TMP/data"

# embedded_psql SQL: runs SQL in the embedded cluster's `nimbus` database as its owner.
embedded_psql() {
  run_as_owner "$(cluster_directory "$data")" "$NIMBUS_TEST_PG_BIN/psql" \
    "postgresql:///nimbus?host=$(socket_directory "$data")&user=nimbus" -X -q -At -v ON_ERROR_STOP=1 -c "$1"
}

note "a fresh data directory"
[ ! -e "$data" ] || fail "$data exists before the test"
start_nimbus --data-dir "$data"
first_pid=$NIMBUS_PID first_url=$NIMBUS_URL
grep -q 'initializing a new PostgreSQL cluster' "$NIMBUS_LOG" || fail "the first start did not say it initialized a cluster"
[ -f "$(cluster_directory "$data")/PG_VERSION" ] || fail "no cluster in $(cluster_directory "$data")"
request GET /healthz
expect_status 200 "GET /healthz (fresh embedded database)"
expect_json_field status ok
postmaster=$(postmaster_pid "$data")
[ -n "$postmaster" ] || fail "no postmaster running for $data"
ok "initialized in $(cluster_directory "$data"), /healthz 200, postmaster $postmaster"
embedded_psql "CREATE TABLE it_marker (note text); INSERT INTO it_marker VALUES ('before kill -9')" \
  || fail "cannot write a marker row into the embedded database"

note "a second server on the same data directory"
start=$(now_ms)
timeout 30 "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --data-dir "$data" >"$TEST_TMP/second.out" 2>&1
second_status=$?
took=$(( $(now_ms) - start ))
[ "$second_status" -ne 0 ] || fail "a second nimbus on the same data directory exited 0"
[ "$second_status" -ne 124 ] || fail "a second nimbus on the same data directory was still running after 30 s"
[ "$took" -le 5000 ] || fail "the second nimbus took $took ms to give up, expected to fail fast"
grep -qi 'data directory' "$TEST_TMP/second.out" || fail "the second nimbus's message does not mention the data directory: $(cat "$TEST_TMP/second.out")"
grep -q 'listening on' "$TEST_TMP/second.out" && fail "the second nimbus printed 'listening on'"
ok "second server: exit $second_status after $took ms: $(grep -i 'data directory' "$TEST_TMP/second.out" | head -n 1)"
process_alive "$first_pid" || fail "the first nimbus died when the second one started"
[ "$(postmaster_pid "$data")" = "$postmaster" ] || fail "the postmaster changed from $postmaster to '$(postmaster_pid "$data")'"
request GET /healthz
expect_status 200 "GET /healthz of the first server after the second failed"
ok "the first server keeps serving with the same postmaster"

note "SIGTERM stops nimbus and its cluster"
postgres_pids=$(postgres_processes_of "$postmaster" | tr '\n' ' ')
stop_nimbus "$first_pid" || fail "nimbus did not exit 0 on SIGTERM"
for pid in $postgres_pids; do
  process_alive "$pid" && fail "PostgreSQL process $pid still runs after nimbus stopped"
done
ok "exit 0; PostgreSQL processes $postgres_pids are gone"

note "restart on the existing directory, then kill -9"
start_nimbus --data-dir "$data"
grep -q 'initializing a new PostgreSQL cluster' "$NIMBUS_LOG" && fail "the second start initialized the cluster again"
request GET /healthz
expect_status 200 "GET /healthz after a restart"
postmaster=$(postmaster_pid "$data")
[ -n "$postmaster" ] || fail "no postmaster after restart"
kill -KILL "$NIMBUS_PID"
wait "$NIMBUS_PID" 2>/dev/null
process_alive "$postmaster" || fail "the postmaster died with nimbus; the leftover-cluster case is not exercised"
ok "nimbus killed with SIGKILL; its postmaster $postmaster is left running"

note "the next start takes over the leftover cluster"
start_nimbus --data-dir "$data"
request GET /healthz
expect_status 200 "GET /healthz after kill -9 and restart"
expect_json_field status ok
new_postmaster=$(postmaster_pid "$data")
[ -n "$new_postmaster" ] || fail "no postmaster after recovery"
process_alive "$postmaster" && [ "$new_postmaster" != "$postmaster" ] && fail "the leftover postmaster $postmaster still runs beside $new_postmaster"
marker=$(embedded_psql "SELECT note FROM it_marker") || fail "the marker table is gone after recovery"
[ "$marker" = "before kill -9" ] || fail "the marker row reads '$marker' after recovery"
ok "recovered: /healthz 200, postmaster $new_postmaster, committed data kept"

postgres_pids=$(postgres_processes_of "$new_postmaster" | tr '\n' ' ')
stop_nimbus || fail "nimbus did not exit 0 on SIGTERM after recovery"
for pid in $postgres_pids; do
  process_alive "$pid" && fail "PostgreSQL process $pid still runs after the recovered nimbus stopped"
done
ok "the recovered server stops cleanly with its cluster"
