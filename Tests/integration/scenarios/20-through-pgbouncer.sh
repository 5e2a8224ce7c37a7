#!/usr/bin/env bash
# Nimbus through PgBouncer in transaction pooling mode (Debian 12's pgbouncer 1.18), started on a
# loopback port with the shipped deploy/pgbouncer.ini, templated only for ports, paths and the
# database name. Two instances run with `--database-pooler transaction` and a direct
# `--listen-database-url` (LISTEN needs one session for the server's life); through them the no-missed-change checker (16 writers, 6 readers,
# alternating between the instances) loses, misses and duplicates nothing, and a long-poll on one
# instance is answered within 1 s of a write through the other. A third instance pointed at the
# pooler without the option finds out by itself (one warning) and serves correctly. The options
# that cannot work together are refused with a sentence.
source "$(dirname "$0")/../lib.sh"
source "$IT_DIR/proxies.sh"  # free_port

SECONDS_OF_WRITES=${PGBOUNCER_SECONDS:-12}
# find_tool: Debian puts pgbouncer in /usr/sbin, which a normal user's PATH lacks.
pgbouncer=$(find_tool pgbouncer) || fail "pgbouncer is not installed (Tests/run.sh installs it: bash deploy/install-deps.sh pgbouncer)"

note "options that cannot work together"
expect_refusal() { # WHAT TEXT ARGS...: serve exits 64 and its error contains TEXT
  local what=$1 text=$2; shift 2
  local err
  err=$("$NIMBUS_BIN" serve --listen 127.0.0.1:0 "$@" 2>&1 >/dev/null)
  local status=$?
  [ "$status" = 64 ] || fail "$what: exit $status (expected 64): $err"
  [[ $err == *"$text"* ]] || fail "$what: the error does not say '$text': $err"
  ok "$what: exit 64, '$text'"
}
expect_refusal "transaction pooling without a direct LISTEN URL" "pass --listen-database-url with a direct connection" \
  --database-url postgresql://127.0.0.1:1/x --database-pooler transaction
expect_refusal "an unknown pooler mode" "'--database-pooler' is none or transaction, not 'statement'" \
  --database-url postgresql://127.0.0.1:1/x --database-pooler statement
expect_refusal "a pooler in front of the embedded database" "goes with --database-url" \
  --data-dir "$TEST_TMP/embedded" --database-pooler transaction --listen-database-url postgresql://127.0.0.1:1/x
[ ! -e "$TEST_TMP/embedded" ] || fail "a refused serve created its data directory"

NIMBUS_DB_URL=$(fresh_database)
db_name=$(printf '%s' "$NIMBUS_DB_URL" | sed -E 's#^postgres(ql)?://[^/]*/([^?]*).*#\2#')
socket_dir=$(printf '%s' "$NIMBUS_TEST_DATABASE_URL" | sed -n 's/.*[?&]host=\([^&]*\).*/\1/p')
db_user=$(printf '%s' "$NIMBUS_TEST_DATABASE_URL" | sed -n 's/.*[?&]user=\([^&]*\).*/\1/p')
[ -n "$socket_dir" ] && [ -n "$db_user" ] || fail "cannot read host= and user= from $NIMBUS_TEST_DATABASE_URL"

note "PgBouncer with deploy/pgbouncer.ini"
bouncer_dir=$TEST_TMP/pgbouncer
mkdir -p "$bouncer_dir"
# The test cluster trusts local connections; PgBouncer's auth file still names the user.
printf '"%s" ""\n' "$db_user" >"$bouncer_dir/userlist.txt"
# Its log and pid file are written by the cluster's user (pgbouncer refuses root).
chmod 1777 "$bouncer_dir"; chmod 644 "$bouncer_dir"/userlist.txt
# start_bouncer PORT: PgBouncer with the shipped file templated for PORT; true once it answers,
# false when it exits first (its port was taken between free_port and its bind: the suites of
# other checkouts run beside this one).
start_bouncer() {
  bouncer_port=$1
  sed -e "s#^nimbus = host=/var/run/postgresql port=5432 dbname=nimbus #nimbus = host=$socket_dir port=5432 dbname=$db_name #" \
      -e "s#^listen_port = 6432#listen_port = $bouncer_port#" \
      -e "s#^auth_type = scram-sha-256#auth_type = trust#" \
      -e "s#^auth_file = /etc/pgbouncer/userlist.txt#auth_file = $bouncer_dir/userlist.txt#" \
      -e "s#^logfile = .*#logfile = $bouncer_dir/pgbouncer.log#" \
      -e "s#^pidfile = .*#pidfile = $bouncer_dir/pgbouncer.pid#" \
      "$REPO_DIR/deploy/pgbouncer.ini" >"$bouncer_dir/pgbouncer.ini"
  grep -q "dbname=$db_name " "$bouncer_dir/pgbouncer.ini" && grep -q "listen_port = $bouncer_port" "$bouncer_dir/pgbouncer.ini" \
    || fail "templating deploy/pgbouncer.ini changed nothing: the shipped file's lines moved"
  chmod 644 "$bouncer_dir/pgbouncer.ini"
  # PgBouncer refuses to run as root: as the cluster's user when the tests run as root (as a
  # normal user, NIMBUS_TEST_PG_RUN_AS is empty and it runs as that user, like the cluster).
  $NIMBUS_TEST_PG_RUN_AS "$pgbouncer" "$bouncer_dir/pgbouncer.ini" >"$bouncer_dir/stdout" 2>&1 &
  bouncer_pid=$!
  track_pid "$bouncer_pid"
  pooled_url="postgresql://$db_user@127.0.0.1:$bouncer_port/nimbus"
  local i
  for ((i = 0; i < 50; i++)); do
    process_alive "$bouncer_pid" || return 1
    "$NIMBUS_TEST_PG_BIN/psql" "$pooled_url" -X -q -At -c 'SELECT 1' >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 0  # still running: the check below says why it does not answer
}
for attempt in 1 2 3; do
  start_bouncer "$(free_port)" && break
  grep -q 'Address already in use' "$bouncer_dir/pgbouncer.log" "$bouncer_dir/stdout" 2>/dev/null \
    || { cat "$bouncer_dir/pgbouncer.log" "$bouncer_dir/stdout" >&2; fail "PgBouncer exited at its start"; }
  note "port $bouncer_port was taken before PgBouncer bound it; another port (attempt $attempt of 3)"
  : >"$bouncer_dir/pgbouncer.log"
done
[ "$("$NIMBUS_TEST_PG_BIN/psql" "$pooled_url" -X -q -At -c 'SELECT 1' 2>&1)" = 1 ] \
  || { cat "$bouncer_dir/pgbouncer.log" "$bouncer_dir/stdout" >&2; fail "PgBouncer did not accept connections on port $bouncer_port"; }
[ "$("$NIMBUS_TEST_PG_BIN/psql" "$pooled_url" -X -q -At -c 'SHOW jit')" = off ] \
  || fail "connect_query did not set jit = off on PgBouncer's server connections"
ok "PgBouncer pid $bouncer_pid on port $bouncer_port in transaction mode, connect_query applied"

pooled=(--database-url "$pooled_url" --listen-database-url "$NIMBUS_DB_URL" --requests-per-second-per-token 0)
start_nimbus "${pooled[@]}" --database-pooler transaction
A_URL=$NIMBUS_URL A_PORT=$NIMBUS_PORT A_LOG=$NIMBUS_LOG
start_nimbus "${pooled[@]}" --database-pooler transaction
B_URL=$NIMBUS_URL B_PORT=$NIMBUS_PORT B_LOG=$NIMBUS_LOG
NIMBUS_URL=$A_URL
for base in "$A_URL" "$B_URL"; do
  wait_metric nimbus_listener_connected 1 5 "$base" || fail "$base: the LISTEN connection is not up"
done
ok "two instances through PgBouncer, LISTEN over the direct URL"

note "the no-missed-change checker through both instances and PgBouncer"
cc_bin=${CC:-$(command -v cc || command -v clang || command -v gcc || true)}
"$cc_bin" -O2 -pthread -o "$TEST_TMP/nmcheck" "$REPO_DIR/Tests/soak/nmcheck.c" || fail "cannot compile Tests/soak/nmcheck.c"
nimbus_admin user add checker >/dev/null
: >"$TEST_TMP/tokens"
for k in 1 2 3 4 5 6 7 8; do
  nimbus_admin token issue checker --device "device-$k" | sed -n 's/^token: //p' >>"$TEST_TMP/tokens"
done
dbpath=$(api_path x | sed 's#/x$##')
out=$TEST_TMP/nmcheck.out
timeout $((SECONDS_OF_WRITES + 120)) "$TEST_TMP/nmcheck" -p "$A_PORT,$B_PORT" -d "$dbpath" -t "$TEST_TMP/tokens" -w 16 -r 6 \
  -s "$SECONDS_OF_WRITES" -z Pooled >"$out" 2>"$out.err"
status=$?
sed 's/^/  /' "$out"
[ "$status" = 0 ] && grep -q '^RESULT: PASS$' "$out" || { head -n 30 "$out.err" >&2; fail "the checker through PgBouncer failed (exit $status)"; }
ok "checker: $(grep '^nmcheck: lost' "$out" | sed 's/^nmcheck: //')"

note "long-polls: a write through one instance wakes a waiter on the other"
issue_token MAC checker mac
issue_token PHONE checker phone
api_ok "$MAC" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Wake"}}}]}'
NIMBUS_URL=$B_URL api_ok "$PHONE" records/changes '{"zoneID":{"zoneName":"Wake"}}'
token=$(json_last_field syncToken)
for round in 1 2 3; do
  from=$A_URL to=$B_URL
  [ "$round" = 2 ] && from=$B_URL to=$A_URL
  lp_start "wake-$round" "$PHONE" records/changes "{\"zoneID\":{\"zoneName\":\"Wake\"},\"syncToken\":\"$token\",\"wait\":20}" "$to"
  wait_metric nimbus_longpoll_waiters 1 5 "$to" || fail "round $round: the waiter did not park on $to"
  sent=$(now_us)
  NIMBUS_URL=$from api_ok "$MAC" records/modify "{\"zoneID\":{\"zoneName\":\"Wake\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"r$round\",\"recordType\":\"Event\",\"fields\":{\"n\":{\"value\":$round}}}}]}"
  expect_item_codes ok "round $round: the write"
  lp_finish "wake-$round" 20
  [ "$LP_STATUS" = 200 ] || fail "round $round: status $LP_STATUS ${LP_BODY:0:300}"
  ms=$(( (LP_DONE_US - sent) / 1000 ))
  [ "$(record_summary "$LP_BODY" | cut -d' ' -f1)" = "r$round" ] || fail "round $round: the answer lacks r$round: ${LP_BODY:0:300}"
  [ "$ms" -lt 1000 ] || fail "round $round: answered ${ms} ms after the write (limit 1000 ms)"
  ok "round $round: waiter on ${to##*:} answered ${ms} ms after a write through ${from##*:}"
  token=$(json_last_field syncToken "$LP_BODY")
done

note "an instance pointed at the pooler without --database-pooler finds out by itself"
start_nimbus "${pooled[@]}" --pool-size 8
C_PORT=$NIMBUS_PORT C_LOG=$NIMBUS_LOG
# Concurrent requests make PgBouncer hand this instance's connections different server
# connections, where their prepared statements are missing.
out=$TEST_TMP/nmcheck-unset.out
timeout 130 "$TEST_TMP/nmcheck" -p "$C_PORT" -d "$dbpath" -t "$TEST_TMP/tokens" -w 16 -r 6 -s 6 -z Unset >"$out" 2>"$out.err"
sed 's/^/  /' "$out"
summary=$(grep '^nmcheck: lost' "$out" | sed 's/^nmcheck: //')
[[ $summary == "lost 0, missed 0, duplicated 0, regressed 0, token 0, unexpected 0, errors "* ]] \
  || { head -n 30 "$out.err" >&2; fail "without --database-pooler: $summary"; }
# A statement that finds the pooler inside a transaction fails that request as a transient 503
# (clients retry); outside one it runs again unnamed. At most one per pooled connection in flight.
errors=${summary##*errors }
[ "$errors" -le 8 ] || fail "without --database-pooler: $errors failed requests (at most one per connection, 8, expected)"
warnings=$(grep -c 'named prepared statements are off from now on' "$C_LOG")
[ "$warnings" = 1 ] || fail "expected one warning naming the pooler in $C_LOG, found $warnings"
grep -q 'Pass --database-pooler transaction' "$C_LOG" || fail "the warning does not name --database-pooler"
ok "without --database-pooler: one warning, $errors transient failures, nothing lost or missed"

note "admin commands through the pooler leave no lock behind"
# The migration and pruning locks are transaction-level: through a transaction pooler a
# session-level lock would stay on whichever server connection took it, and stop every later run.
for round in 1 2; do
  "$NIMBUS_BIN" migrate --database-url "$pooled_url" >/dev/null 2>"$TEST_TMP/migrate.err" || fail "migrate through PgBouncer: $(cat "$TEST_TMP/migrate.err")"
  NIMBUS_DB_URL=$pooled_url run_prune
  [ "$PRUNE_STATUS" = 0 ] || fail "prune through PgBouncer, round $round: exit $PRUNE_STATUS: $PRUNE_ERR"
done
locks=$(psql_db "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")
[ "$locks" = 0 ] || fail "$locks advisory locks are held after the admin commands finished"
ok "migrate and prune twice each through PgBouncer; no advisory lock held afterwards"

for log in "$A_LOG" "$B_LOG" "$C_LOG"; do
  ! grep -q 'INTERNAL_ERROR\|internal error' "$log" || fail "internal errors in $log: $(grep -m3 'INTERNAL_ERROR\|internal error' "$log")"
done
! grep -q 'named prepared statements are off' "$A_LOG" "$B_LOG" || fail "an instance with --database-pooler transaction prepared a named statement"
ok "no internal errors; the instances in transaction mode never named a statement"
