#!/usr/bin/env bash
# The command line: --help at every level, usage errors exit 64 naming the flag, `nimbus migrate`
# applies migrations once (a second run is a no-op), honours --migrations-dir, and refuses a
# migration edited after it was applied, naming the file.
source "$(dirname "$0")/../lib.sh"

# Run from the scratch directory: a command that wrongly fell back to ./.nimbus stays in it.
cd "$TEST_TMP" || fail "cannot enter $TEST_TMP"

# run_cli NAME ARGS...: runs nimbus with a 30 s bound; sets CLI_STATUS, CLI_OUT, CLI_ERR.
run_cli() {
  local name=$1; shift
  timeout 30 "$NIMBUS_BIN" "$@" >"$TEST_TMP/$name.out" 2>"$TEST_TMP/$name.err"
  CLI_STATUS=$?
  CLI_OUT=$(cat "$TEST_TMP/$name.out")
  CLI_ERR=$(cat "$TEST_TMP/$name.err")
}

note "--help at every level"
for args in "--help" "help" "serve --help" "migrate --help" "serve -h"; do
  # shellcheck disable=SC2086
  run_cli help $args
  [ "$CLI_STATUS" -eq 0 ] || fail "nimbus $args exited $CLI_STATUS: $CLI_ERR"
  for section in OVERVIEW: USAGE: OPTIONS:; do
    grep -q "^$section" <<<"$CLI_OUT" || fail "nimbus $args: no $section section in: $CLI_OUT"
  done
  grep -q -- '--help' <<<"$CLI_OUT" || fail "nimbus $args does not list --help"
done
run_cli help --help
grep -qw serve <<<"$CLI_OUT" || fail "nimbus --help does not list the serve subcommand"
grep -qw migrate <<<"$CLI_OUT" || fail "nimbus --help does not list the migrate subcommand"
run_cli help serve --help
for flag in --listen --data-dir --database-url --drain-timeout --max-request-bytes --max-request-line-bytes \
  --max-header-line-bytes --max-header-bytes --max-header-count --header-timeout-seconds \
  --body-timeout-seconds --keep-alive-timeout-seconds --max-connections; do
  grep -q -- "$flag" <<<"$CLI_OUT" || fail "nimbus serve --help does not document $flag"
done
grep -q 'NIMBUS_MAX_REQUEST_BYTES' <<<"$CLI_OUT" || fail "nimbus serve --help does not name the environment variables"
run_cli help migrate --help
grep -q -- '--migrations-dir' <<<"$CLI_OUT" || fail "nimbus migrate --help does not document --migrations-dir"
ok "nimbus, serve and migrate --help: OVERVIEW, USAGE, OPTIONS, exit 0"

note "help never cuts an option name: every --option each command's help lists is one its parser accepts"
checked=0
for command in serve migrate user token device admin schema prune stats backup restore export import db-url; do
  run_cli help-$command $command --help
  [ "$CLI_STATUS" -eq 0 ] || fail "nimbus $command --help exited $CLI_STATUS: $CLI_ERR"
  options=$(printf '%s\n' "$CLI_OUT" | sed -n '/^OPTIONS:/,$p' | grep -o -- '^  --[a-z0-9-]*' | sed 's/^  //')
  [ -n "$options" ] || fail "nimbus $command --help lists no options"
  for option in $options; do
    run_cli accepts $command --help "$option" value
    [ "$CLI_STATUS" -eq 0 ] || fail "nimbus $command --help lists $option, but the parser refuses it: $CLI_ERR"
    checked=$((checked + 1))
  done
done
run_cli help-serve serve --help
grep -q -- '--max-asset-tokens-per-request' <<<"$CLI_OUT" || fail "serve --help cuts --max-asset-tokens-per-request"
ok "$checked options listed by 14 commands' --help are all accepted by their parsers (none cut)"

run_cli version version
[ "$CLI_STATUS" -eq 0 ] || fail "nimbus version exited $CLI_STATUS"
[[ $CLI_OUT =~ ^nimbus\ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "nimbus version printed '$CLI_OUT'"
ok "nimbus version: $CLI_OUT"

note "usage errors exit 64 and name the flag"
# usage_error 'ARGS' NEEDLE [ENV=VALUE...]
usage_error() {
  local args=$1 needle=$2; shift 2
  local start
  start=$(now_ms)
  # shellcheck disable=SC2086
  env "$@" timeout 30 "$NIMBUS_BIN" $args >"$TEST_TMP/usage.out" 2>"$TEST_TMP/usage.err"
  CLI_STATUS=$?
  local took=$(( $(now_ms) - start ))
  CLI_ERR=$(cat "$TEST_TMP/usage.err")
  [ "$CLI_STATUS" -eq 64 ] || fail "nimbus $args ($*): exit $CLI_STATUS, expected 64; stderr: $CLI_ERR"
  grep -q -F -- "$needle" <<<"$CLI_ERR" || fail "nimbus $args: the message does not name '$needle': $CLI_ERR"
  [ "$took" -le 5000 ] || fail "nimbus $args took $took ms to report a usage error"
  grep -q 'listening on' "$TEST_TMP/usage.err" "$TEST_TMP/usage.out" && fail "nimbus $args started serving"
  ok "nimbus $args${*:+ with $*}: 64, '$(head -n 1 "$TEST_TMP/usage.err")'"
}
usage_error "serve --no-such-flag" --no-such-flag
usage_error "serve --listen nonsense" --listen
usage_error "serve --listen 127.0.0.1:99999" --listen
usage_error "serve --max-request-bytes lots" --max-request-bytes
usage_error "serve --header-timeout-seconds -3" --header-timeout-seconds
usage_error "serve --drain-timeout soon" --drain-timeout
usage_error "serve" --max-header-count NIMBUS_MAX_HEADER_COUNT=many
usage_error "serve --log-level loud" --log-level
usage_error "migrate --no-such-flag" --no-such-flag
usage_error "serve --listen" --listen
usage_error "frobnicate" frobnicate
[ ! -e "$TEST_TMP/.nimbus" ] || fail "a usage error still created ./.nimbus"

note "nimbus migrate on a fresh database"
url=$(fresh_database) || exit 1
db_psql() { "$NIMBUS_TEST_PG_BIN/psql" "$url" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }
run_cli migrate1 migrate --database-url "$url"
[ "$CLI_STATUS" -eq 0 ] || fail "nimbus migrate exited $CLI_STATUS: $CLI_ERR"
shipped=$(ls "$REPO_DIR/migrations"/*.sql | wc -l)
applied=$(db_psql "SELECT count(*) FROM schema_migrations") || fail "no schema_migrations table after migrate"
[ "$applied" -eq "$shipped" ] || fail "schema_migrations has $applied rows, the checkout ships $shipped migrations"
grep -q 'applied migration' "$TEST_TMP/migrate1.err" || fail "the first migrate did not report applying anything: $CLI_ERR"
tables=$(db_psql "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'schema_migrations'")
[ "$tables" -gt 0 ] || fail "migrate created no tables"
ok "migrate: exit 0, $applied migrations recorded, $tables tables"

before=$(db_psql "SELECT string_agg(version || ':' || checksum || ':' || applied_at, ',' ORDER BY version) FROM schema_migrations")
run_cli migrate2 migrate --database-url "$url"
[ "$CLI_STATUS" -eq 0 ] || fail "a second nimbus migrate exited $CLI_STATUS: $CLI_ERR"
grep -q 'applied migration' "$TEST_TMP/migrate2.err" && fail "the second migrate applied something: $CLI_ERR"
after=$(db_psql "SELECT string_agg(version || ':' || checksum || ':' || applied_at, ',' ORDER BY version) FROM schema_migrations")
[ "$before" = "$after" ] || fail "the second migrate changed schema_migrations: $before -> $after"
ok "a second migrate is a no-op (exit 0, schema_migrations untouched)"

note "--migrations-dir: a new migration is applied, an edited applied one is refused"
migrations="$TEST_TMP/migrations"
cp -r "$REPO_DIR/migrations" "$migrations"
url=$(fresh_database) || exit 1
run_cli migrate3 migrate --database-url "$url" --migrations-dir "$migrations"
[ "$CLI_STATUS" -eq 0 ] || fail "migrate with --migrations-dir exited $CLI_STATUS: $CLI_ERR"
printf 'CREATE TABLE it_added_by_test (id integer);\n' >"$migrations/9001_it_added_by_test.sql"
run_cli migrate4 migrate --database-url "$url" --migrations-dir "$migrations"
[ "$CLI_STATUS" -eq 0 ] || fail "migrate with an added migration exited $CLI_STATUS: $CLI_ERR"
[ "$(db_psql "SELECT count(*) FROM schema_migrations WHERE version = 9001")" = 1 ] || fail "migration 9001 from --migrations-dir was not recorded"
db_psql "SELECT count(*) FROM it_added_by_test" >/dev/null || fail "migration 9001 from --migrations-dir did not run"
ok "a migration added to --migrations-dir is applied"

first=$(ls "$migrations" | grep '^0001_.*\.sql$' | head -n 1)
[ -n "$first" ] || fail "no 0001 migration in $migrations"
printf '\n-- edited after it was applied\n' >>"$migrations/$first"
before=$(db_psql "SELECT count(*) FROM schema_migrations")
run_cli migrate5 migrate --database-url "$url" --migrations-dir "$migrations"
[ "$CLI_STATUS" -ne 0 ] || fail "migrate with an edited applied migration exited 0"
[ "$CLI_STATUS" -ne 124 ] || fail "migrate with an edited applied migration hung"
printf '%s\n' "$CLI_ERR$CLI_OUT" | grep -q -F "$first" || fail "the refusal does not name $first: $CLI_ERR"
[ "$(db_psql "SELECT count(*) FROM schema_migrations")" = "$before" ] || fail "the refused migrate changed schema_migrations"
ok "edited $first: exit $CLI_STATUS, '$(grep -F "$first" "$TEST_TMP/migrate5.err" | head -n 1 | cut -c1-160)'"

note "serve refuses the edited migration too"
timeout 30 "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url "$url" --migrations-dir "$migrations" \
  >"$TEST_TMP/serve.out" 2>&1
status=$?
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "serve with an edited applied migration: exit $status"
grep -q -F "$first" "$TEST_TMP/serve.out" || fail "serve's refusal does not name $first: $(cat "$TEST_TMP/serve.out")"
grep -q 'listening on' "$TEST_TMP/serve.out" && fail "serve listened despite the edited migration"
ok "serve: exit $status without listening"
