#!/usr/bin/env bash
# A rolling upgrade (issue 16, docs/operations.md): the binary of the previous schema version
# (Tests/previous-version.sh) and this one serve one database at once. While the no-missed-change
# checker (Tests/soak/nmcheck.c) writes and reads through the old instance, the new one starts
# and migrates the database forward; then the old instance restarts on the newer schema, and the
# checker runs through both instances at once, writers and readers alternating between them.
# Both runs must find nothing lost, missed, duplicated or regressed. Last, a dump of the old
# schema restores into the new binary and is migrated forward in the same transaction.
source "$(dirname "$0")/../lib.sh"

SECONDS_OF_WRITES=${UPGRADE_SECONDS:-15}
old_bin=${NIMBUS_PREVIOUS_BIN:-}
if [ -z "$old_bin" ]; then
  note "building the previous version (Tests/previous-version.sh)"
  old_bin=$(bash "$REPO_DIR/Tests/previous-version.sh" 2>"$TEST_TMP/previous.log") \
    || { tail -n 20 "$TEST_TMP/previous.log" >&2; fail "the previous version could not be built"; }
fi
old_migrations=$(cd "$(dirname "$old_bin")/../.." && pwd)/src/migrations
[ -d "$old_migrations" ] || fail "no migrations beside the previous binary ($old_migrations)"
old_version=$(ls "$old_migrations" | sort | tail -n 1 | cut -c1-4)
new_version=$(ls "$REPO_DIR/migrations" | sort | tail -n 1 | cut -c1-4)
[ "$old_version" != "$new_version" ] || fail "the previous binary has the same newest migration ($new_version)"

cc_bin=${CC:-$(command -v cc || command -v clang || command -v gcc || true)}
"$cc_bin" -O2 -pthread -o "$TEST_TMP/nmcheck" "$REPO_DIR/Tests/soak/nmcheck.c" || fail "cannot compile Tests/soak/nmcheck.c"
schema_version() { psql_db "SELECT max(version) FROM schema_migrations"; }

note "the previous version ($old_version) serves a fresh database"
NIMBUS_DB_URL=$(fresh_database)
NIMBUS_BIN=$old_bin start_nimbus --database-url "$NIMBUS_DB_URL" --migrations-dir "$old_migrations" --requests-per-second-per-token 0
old_pid=$NIMBUS_PID old_port=$NIMBUS_PORT old_log=$NIMBUS_LOG
[ "$(schema_version)" = "$((10#$old_version))" ] || fail "the old binary left schema version $(schema_version)"
"$old_bin" user add checker --database-url "$NIMBUS_DB_URL" --migrations-dir "$old_migrations" >/dev/null || fail "user add (old) failed"
: >"$TEST_TMP/tokens"
for k in 1 2 3 4 5 6 7 8; do
  "$old_bin" token issue checker --device "device-$k" --database-url "$NIMBUS_DB_URL" --migrations-dir "$old_migrations" \
    | sed -n 's/^token: //p' >>"$TEST_TMP/tokens"
done
[ "$(wc -l <"$TEST_TMP/tokens")" = 8 ] || fail "expected 8 tokens"
"$NIMBUS_TEST_PG_BIN/pg_dump" --format=custom --file="$TEST_TMP/old-schema.dump" "$NIMBUS_DB_URL" || fail "pg_dump of the old schema failed"
dbpath=$(api_path x | sed 's#/x$##')

# checker LABEL SECONDS PORTS: one nmcheck run; fails the scenario unless it passes.
checker() {
  local out=$TEST_TMP/nmcheck-$1.out
  timeout $(($2 + 120)) "$TEST_TMP/nmcheck" -p "$3" -d "$dbpath" -t "$TEST_TMP/tokens" -w 16 -r 6 -s "$2" -z "Upgrade$1" \
    >"$out" 2>"$out.err"
  local status=$?
  sed 's/^/  /' "$out"
  [ "$status" = 0 ] && grep -q '^RESULT: PASS$' "$out" || { head -n 30 "$out.err" >&2; fail "the checker failed in $1 (exit $status)"; }
  ok "$1: $(grep '^nmcheck: lost' "$out" | sed 's/^nmcheck: //')"
}

note "the checker through the old instance while the new binary starts and migrates the database"
checker during-migration "$SECONDS_OF_WRITES" "$old_port" &
checker_pid=$!
sleep 3
start_nimbus --database-url "$NIMBUS_DB_URL" --requests-per-second-per-token 0
new_pid=$NIMBUS_PID new_port=$NIMBUS_PORT new_log=$NIMBUS_LOG
[ "$(schema_version)" = "$((10#$new_version))" ] || fail "the new binary left schema version $(schema_version)"
wait "$checker_pid" || fail "the checker during the migration failed"
ok "the new binary migrated $old_version → $new_version while the old one served the checker"

note "the old instance restarts on the newer schema; the checker goes through both at once"
stop_nimbus "$old_pid" || fail "the old instance did not stop cleanly"
NIMBUS_BIN=$old_bin start_nimbus --database-url "$NIMBUS_DB_URL" --migrations-dir "$old_migrations" --requests-per-second-per-token 0
old_pid=$NIMBUS_PID old_port=$NIMBUS_PORT old_log=$NIMBUS_LOG
grep -q 'migration this binary does not know' "$old_log" || fail "the old instance did not warn about the newer schema"
checker both "$SECONDS_OF_WRITES" "$old_port,$new_port"
for log in "$old_log" "$new_log"; do
  logged=$(grep -a -i 'internal error\|INTERNAL_ERROR' "$log" | head -n 3)
  [ -z "$logged" ] || fail "$(basename "$log") logged internal errors: $logged"
done
ok "old and new instances on one database: no lost or missed change, no internal error"
stop_nimbus "$old_pid" || fail "the old instance did not stop cleanly"
stop_nimbus "$new_pid" || fail "the new instance did not stop cleanly"

note "an archive of the old schema restores into the new binary, migrated forward"
target=$(fresh_database)
"$NIMBUS_BIN" restore "$TEST_TMP/old-schema.dump" --database-url "$target" >"$TEST_TMP/restore.out" 2>&1 \
  || fail "restore of the old schema's dump failed: $(cat "$TEST_TMP/restore.out")"
grep -q 'migrated forward' "$TEST_TMP/restore.out" || fail "restore did not say it migrated forward: $(cat "$TEST_TMP/restore.out")"
[ "$("$NIMBUS_TEST_PG_BIN/psql" "$target" -X -At -c "SELECT max(version) FROM schema_migrations")" = "$((10#$new_version))" ] \
  || fail "the restored database is not at schema version $new_version"
[ "$("$NIMBUS_BIN" token list checker --database-url "$target" | wc -l)" = 8 ] || fail "the restored database lacks the 8 tokens"
ok "restore of a $old_version archive: $(cat "$TEST_TMP/restore.out")"
finish_scenario
