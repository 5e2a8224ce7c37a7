#!/usr/bin/env bash
# Where the embedded database lives, and admin commands that find no database (issue 16, friction
# 1 and 2), as whoever runs the suite (root, as CI does, or a normal user) and as a normal user
# (nobody when the suite runs as root; the user running it otherwise):
# - an admin command without --data-dir in a directory with no .nimbus, or with a --data-dir or
#   --database-url that holds no Nimbus database, exits non-zero naming where it looked, and
#   creates nothing;
# - the cluster lives in the data directory when the database user can reach it (missing parents
#   are created reachable, whatever the umask);
# - root only: when a parent is private it lives in /var/lib/nimbus/clusters/<hash>, one line says
#   so and how to reach it, `nimbus db-url` prints a URL psql connects with, and a data directory
#   deleted and made again does not take over the old cluster. A normal user's server runs
#   PostgreSQL as that user, who can reach its own private parent: the cluster stays in the data
#   directory, and the relocation steps are skipped (SKIP (not root) lines);
# - a normal user: the cluster lives in the data directory; migrate, user add, backup, restore and
#   db-url work.
source "$(dirname "$0")/../lib.sh"

bin_dir=$TEST_TMP/bin
mkdir -p "$bin_dir" && cp "$NIMBUS_BIN" "$bin_dir/nimbus" && cp -r "$REPO_DIR/migrations" "$bin_dir/migrations" \
  || fail "cannot copy the binary and migrations"
chmod -R a+rX "$bin_dir"
chmod 711 "$TEST_TMP"
nimbus() { "$bin_dir/nimbus" "$@" --migrations-dir "$bin_dir/migrations"; }
# who: root, or the normal user running the suite. as_normal DIR ARGS...: nimbus ARGS in DIR as a
# normal user: nobody (runuser) when root, else the user running the suite.
who=$(id -un)
if is_root; then
  normal_user=nobody
  runuser_exe=$(find_tool runuser) || fail "runuser is not installed (util-linux)"
  as_normal() { (cd "$1" && shift && "$runuser_exe" -u nobody -- "$bin_dir/nimbus" "$@" --migrations-dir "$bin_dir/migrations"); }
else
  normal_user=$who
  as_normal() { (cd "$1" && shift && "$bin_dir/nimbus" "$@" --migrations-dir "$bin_dir/migrations"); }
fi

# expect_no_database WHO WHERE COMMAND...: refused, naming WHERE, nothing created.
expect_no_database() {
  local who=$1 where=$2; shift 2
  "$@" >"$TEST_TMP/refused.out" 2>&1 && fail "$who: '$*' exited 0 without a database: $(cat "$TEST_TMP/refused.out")"
  grep -q "no Nimbus database at $where — pass --data-dir or --database-url" "$TEST_TMP/refused.out" \
    || fail "$who: '$*' did not say where it looked: $(cat "$TEST_TMP/refused.out")"
}

note "$who: admin commands refuse to create a database"
mkdir -p "$TEST_TMP/empty-cwd"
for command in "user list" "user add alice" "token list alice" "stats" "backup" "export --user alice --output $TEST_TMP/out" "db-url" "prune --dry-run"; do
  # shellcheck disable=SC2086
  expect_no_database "$who" "$TEST_TMP/empty-cwd/.nimbus" bash -c "cd '$TEST_TMP/empty-cwd' && '$bin_dir/nimbus' $command --migrations-dir '$bin_dir/migrations'"
done
[ ! -e "$TEST_TMP/empty-cwd/.nimbus" ] || fail "an admin command created $TEST_TMP/empty-cwd/.nimbus"
expect_no_database "$who" "$TEST_TMP/nowhere" nimbus user list --data-dir "$TEST_TMP/nowhere"
[ ! -e "$TEST_TMP/nowhere" ] || fail "user list created $TEST_TMP/nowhere"
empty_db=$(fresh_database)
expect_no_database "$who" "${empty_db}" nimbus user list --database-url "$empty_db"
[ "$("$NIMBUS_TEST_PG_BIN/psql" "$empty_db" -X -At -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" = 0 ] \
  || fail "user list created tables in an empty database"
ok "$who: user list/add, token list, stats, backup, export, db-url and prune name the data dir or URL they found empty, and create nothing"

note "$who: a reachable data directory holds its cluster (missing parents made reachable under umask 077)"
reachable=$TEST_TMP/srv/nimbus/data
(umask 077 && nimbus migrate --data-dir "$reachable") >"$TEST_TMP/migrate.out" 2>&1 || fail "migrate failed: $(cat "$TEST_TMP/migrate.out")"
track_data_dir "$reachable"
[ -f "$reachable/postgres/PG_VERSION" ] && [ ! -e "$reachable/postgres-location" ] \
  || fail "the cluster is not in $reachable: $(ls -la "$reachable")"
[ "$(stat -c %a "$TEST_TMP/srv")" = 755 ] || fail "the created parent $TEST_TMP/srv has mode $(stat -c %a "$TEST_TMP/srv")"
nimbus user add alice --data-dir "$reachable" >/dev/null || fail "user add failed"
ok "$who: the cluster is in $reachable/postgres; the parents created are mode 755"

mkdir -m 700 "$TEST_TMP/private"
hidden=$TEST_TMP/private/data
if is_root; then
  note "root: a data directory under a private parent"
  start_nimbus --data-dir "$hidden"
  grep -q "cannot reach $hidden.*cluster lives in /var/lib/nimbus/clusters/.*nimbus db-url --data-dir $hidden" "$NIMBUS_LOG" \
    || fail "serve did not say in one line where the cluster lives: $(grep -a cluster "$NIMBUS_LOG")"
  relocated=$(cat "$hidden/postgres-location")
  echo "$relocated" >>"$TEST_TMP/relocated"
  url=$(nimbus db-url --data-dir "$hidden") || fail "db-url failed"
  [ "$("$NIMBUS_TEST_PG_BIN/psql" "$url" -X -At -c "SELECT count(*) FROM schema_migrations")" -gt 0 ] || fail "psql with the db-url ($url) failed"
  nimbus backup --data-dir "$hidden" --output "$TEST_TMP/hidden.dump" >/dev/null || fail "backup of the relocated cluster failed"
  stop_nimbus || fail "serve did not stop"
  ok "root: $(grep -a -o 'the database user .*' "$NIMBUS_LOG" | head -n 1 | cut -c1-160)…; db-url works with psql, backup works"
  rm -rf "$hidden"
  nimbus migrate --data-dir "$hidden" >"$TEST_TMP/again.out" 2>&1 || fail "migrate of the re-made data dir failed: $(cat "$TEST_TMP/again.out")"
  grep -q "moved it to $relocated-orphaned-" "$TEST_TMP/again.out" || fail "the old cluster was not moved aside: $(cat "$TEST_TMP/again.out")"
  ls -d "$relocated"-orphaned-* >>"$TEST_TMP/relocated"
  [ -z "$(nimbus user list --data-dir "$hidden")" ] || fail "the re-made data dir took over the old cluster's users"
  ok "root: a data dir deleted and made again gets a new cluster; the old one is moved aside, not reused"
else
  note "$who: a data directory under its own private parent holds its cluster (PostgreSQL runs as $who)"
  start_nimbus --data-dir "$hidden"
  [ -f "$hidden/postgres/PG_VERSION" ] && [ ! -e "$hidden/postgres-location" ] \
    || fail "the cluster is not in $hidden: $(ls -la "$hidden")"
  ! grep -q "cannot reach" "$NIMBUS_LOG" || fail "serve as $who said it cannot reach its own data directory: $(grep -a 'cannot reach' "$NIMBUS_LOG")"
  stop_nimbus || fail "serve did not stop"
  ok "$who: the cluster is in $hidden/postgres under the private parent; no relocation"
  root_only "a data directory under a private parent: the cluster moves to /var/lib/nimbus/clusters, serve says so in one line, db-url and backup reach it, a re-made data dir does not take it over" \
    "only a server started by root runs PostgreSQL as another user (postgres or nimbus), who cannot reach a private parent; a normal user's runs it as that user (checked above), and /var/lib/nimbus is root's" || true
fi

note "$normal_user: the cluster in its own data directory; migrate, user add, backup, restore, db-url"
home=$TEST_TMP/normal-home
mkdir -p "$home"
is_root && chown nobody "$home"
expect_no_database "$normal_user" "$home/.nimbus" as_normal "$home" user list
[ ! -e "$home/.nimbus" ] || fail "user list as $normal_user created $home/.nimbus"
as_normal "$home" migrate --data-dir "$home/data" >/dev/null 2>&1 || fail "migrate as $normal_user failed"
track_data_dir "$home/data"
[ -f "$home/data/postgres/PG_VERSION" ] && [ "$(stat -c %U "$home/data/postgres")" = "$normal_user" ] || fail "$normal_user's cluster is not in $home/data/postgres"
as_normal "$home" user add bob --data-dir "$home/data" >/dev/null || fail "user add as $normal_user failed"
as_normal "$home" backup --data-dir "$home/data" --output "$home/bob.dump" >/dev/null || fail "backup as $normal_user failed"
as_normal "$home" restore "$home/bob.dump" --data-dir "$home/copy" >/dev/null 2>&1 || fail "restore as $normal_user failed"
track_data_dir "$home/copy"
[ "$(as_normal "$home" user list --data-dir "$home/copy" | cut -f1)" = bob ] || fail "$normal_user's restored copy lacks bob"
as_normal "$home" db-url --data-dir "$home/copy" 2>/dev/null | grep -q "host=$home/copy/run" || fail "db-url as $normal_user does not name $home/copy/run"
ok "$normal_user: cluster in its data dir; migrate, user add, backup, restore and db-url work"

# The relocated clusters (root only) live outside TEST_TMP: remove them (stopped by now).
if [ -f "$TEST_TMP/relocated" ]; then
  while read -r dir; do [[ $dir == /var/lib/nimbus/clusters/* ]] && rm -rf "$dir"; done <"$TEST_TMP/relocated"
fi
finish_scenario
