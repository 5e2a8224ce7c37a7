#!/usr/bin/env bash
# SIGTERM while a slow upload is in flight: the upload still gets its whole answer, new
# connections are refused from the signal on, the server exits 0, and its embedded PostgreSQL
# is stopped. A request slower than --drain-timeout does not hold the shutdown up.
source "$(dirname "$0")/../lib.sh"

# slow_upload BYTES RATE: POST /limits with a BYTES body paced at RATE bytes/s, in the background.
# Sets UPLOAD_PID; the status lands in $TEST_TMP/upload.status.
slow_upload() {
  head -c "$1" /dev/zero | tr '\0' u >"$TEST_TMP/upload.body"
  curl -sS --max-time 30 --limit-rate "$2" -H 'Expect:' -H 'Content-Type: application/octet-stream' \
    --data-binary @"$TEST_TMP/upload.body" -o "$TEST_TMP/upload.answer" -w '%{http_code}' \
    "$NIMBUS_URL/limits" >"$TEST_TMP/upload.status" 2>"$TEST_TMP/upload.err" &
  UPLOAD_PID=$!
  track_pid "$UPLOAD_PID"
}

data="$TEST_TMP/data"
start_nimbus --data-dir "$data"
request GET /healthz
expect_status 200 "GET /healthz (embedded database)"
postmaster=$(postmaster_pid "$data")
[ -n "$postmaster" ] || fail "no running postmaster for $data"
postgres_pids=$(postgres_processes_of "$postmaster" | tr '\n' ' ')
note "embedded PostgreSQL: postmaster $postmaster, processes $postgres_pids"

note "slow upload (4000 bytes at 1500 B/s), SIGTERM after 1 s"
slow_upload 4000 1500
sleep 1
process_alive "$UPLOAD_PID" || fail "the upload finished within 1 s; it cannot test draining: $(cat "$TEST_TMP/upload.err")"
kill -TERM "$NIMBUS_PID"
signalled=$(now_ms)
sleep 0.3

refused_status=$(curl -sS --max-time 3 -o /dev/null -w '%{http_code}' "$NIMBUS_URL/healthz" 2>"$TEST_TMP/new.err")
refused_rc=$?
process_alive "$UPLOAD_PID" || fail "the upload finished before the new-connection check; it cannot test draining"
process_alive "$NIMBUS_PID" || fail "nimbus exited while an upload was in flight"
if [ "$refused_rc" -eq 7 ]; then
  ok "a new connection 0.3 s after SIGTERM is refused (curl exit 7)"
else
  # Checked last so the drain, exit status and database checks below still run.
  fail_later "a new connection 0.3 s after SIGTERM was not refused: curl exit $refused_rc, status $refused_status ($(cat "$TEST_TMP/new.err"))"
fi

wait_exit "$UPLOAD_PID" 20
upload_rc=$?
[ "$upload_rc" -eq 0 ] || fail "the in-flight upload failed (curl exit $upload_rc): $(cat "$TEST_TMP/upload.err")"
[ "$(cat "$TEST_TMP/upload.status")" = 405 ] || fail "the in-flight upload got $(cat "$TEST_TMP/upload.status"), expected 405"
expect_error_body BAD_REQUEST "$(cat "$TEST_TMP/upload.answer")"
ok "the in-flight upload was read to the end and answered 405 after SIGTERM"

wait_exit "$NIMBUS_PID" 30
status=$?
[ "$status" -eq 0 ] || fail "nimbus exited with $status after SIGTERM, expected 0; log: $(tail -n 5 "$NIMBUS_LOG")"
ok "nimbus exited 0, $(( $(now_ms) - signalled )) ms after SIGTERM"

for pid in $postgres_pids; do
  process_alive "$pid" && fail "PostgreSQL process $pid ($(tr '\0' ' ' </proc/"$pid"/cmdline)) still runs after nimbus exited"
done
[ ! -f "$(cluster_directory "$data")/postmaster.pid" ] || fail "postmaster.pid of the embedded cluster is still there"
ok "the embedded PostgreSQL ($postgres_pids) is stopped"

note "--drain-timeout 1 with an upload that needs ~6 s"
start_nimbus --drain-timeout 1
slow_upload 6000 1000
sleep 1
process_alive "$UPLOAD_PID" || fail "the 6 s upload finished within 1 s: $(cat "$TEST_TMP/upload.err")"
kill -TERM "$NIMBUS_PID"
signalled=$(now_ms)
wait_exit "$NIMBUS_PID" 20
status=$?
took=$(( $(now_ms) - signalled ))
[ "$status" -eq 0 ] || fail "nimbus exited with $status after a drain timeout, expected 0"
[ "$took" -le 3500 ] || fail "nimbus took $took ms to exit with --drain-timeout 1"
[ "$took" -ge 800 ] || fail "nimbus exited after $took ms, before the 1 s drain timeout"
wait_exit "$UPLOAD_PID" 20
[ "$(cat "$TEST_TMP/upload.status")" != 405 ] || fail "the upload cut off by the drain timeout still got 405"
ok "exit 0 after $took ms; the unfinished upload was cut off"
