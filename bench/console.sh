#!/usr/bin/env bash
# Admin console benchmark (issue 15, "Figures for the closing note"): time to first render of each
# console page in headless Chromium on a server seeded with BENCH_USERS users and BENCH_RECORDS
# records (target < 500 ms each).
#
#   bash bench/console.sh                                  # 1,000 users, 1,000,000 records
#   BENCH_USERS=100 BENCH_RECORDS=100000 bash bench/console.sh
#
# 1. Builds nimbus in release mode; starts a scratch PostgreSQL cluster (Unix socket only, temp
#    dir) and `nimbus serve --database-url` with its admin listener on a free loopback port.
# 2. Seeds with SQL: BENCH_USERS users, each with a mac and an iphone token, a development
#    database of the AppLocker container and BENCH_RECORDS / BENCH_USERS BlockedAppEvent records
#    in its default zone (every 50th a tombstone, expiries spread over 30 days); each iphone synced
#    the zone 10 records ago. Then VACUUM ANALYZE.
# 3. For each page, a fresh load in Chromium (Tests/integration/cdp.py: navigation start to the end
#    of the page's first render, `document.body.dataset.renderMs`), BENCH_ROUNDS times; the median.
#    Reference, in the same invocation: the sign-in page (the same files, no API call) and, per
#    page, curl's time for the page's main API request (what the database and server cost).
#
# Knobs: BENCH_USERS=1000 BENCH_RECORDS=1000000 BENCH_ROUNDS=3 BENCH_CONSOLE_PAGES="overview users ..." (default: all) BENCH_SKIP_INSTALL=1
#   BENCH_SKIP_BUILD=1 BENCH_NIMBUS_BIN=path BENCH_KEEP=1 (keep the temp dir)
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_USERS=5 BENCH_RECORDS=100 BENCH_ROUNDS=1 BENCH_CONSOLE_PAGES="overview devices records"), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 120 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=console
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 120 BENCH_USERS=5 BENCH_RECORDS=100 BENCH_ROUNDS=1 BENCH_CONSOLE_PAGES="overview devices records" -- "$@"
ROOT=$PWD
USERS=${BENCH_USERS:-1000}
RECORDS=${BENCH_RECORDS:-1000000}
ROUNDS=${BENCH_ROUNDS:-3}
PER_USER=$((RECORDS / USERS))
CONTAINER=iCloud.com.mirxa.AppLocker

WORK="" NIMBUS_PID="" PG_BIN="" PG_DATA=""
stop_own_processes() {
  stop_pid "$NIMBUS_PID" TERM 30
}
on_exit_stop stop_own_processes

[ -n "${BENCH_SKIP_INSTALL:-}" ] || bash deploy/install-deps.sh chromium python3
pg_find_bin || die "PostgreSQL server programs not found (deploy/install-deps.sh)"
command -v chromium >/dev/null || die "chromium is not installed"
release_binary
WORK=$(mktemp -d /tmp/nimbus-console-bench.XXXXXX)
chmod 755 "$WORK"

start_bench_postgres max_connections=100
psql -d postgres -c 'CREATE DATABASE nimbus' >/dev/null
DB_URL="postgresql:///nimbus?host=$SOCK&user=nimbus"
"$NIMBUS_BIN" serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --database-url "$DB_URL" --prune-interval 1h \
  </dev/null 2>"$WORK/nimbus.log" &
NIMBUS_PID=$!
ADMIN=""
for ((i = 0; i < 1200; i++)); do
  ADMIN=$(grep -o 'admin console on http://[0-9.]*:[0-9]*' "$WORK/nimbus.log" 2>/dev/null | head -1 | sed 's/admin console on //' || true)
  [ -n "$ADMIN" ] && break
  alive; sleep 0.1
done
[ -n "$ADMIN" ] || die "nimbus did not start its admin listener within 120 s"
admin schema import deploy/schemas/applocker.json >/dev/null || die "schema import failed"
TOKEN=$(admin admin token issue bench | sed -n 's/^token: //p')
[ -n "$TOKEN" ] || die "nimbus admin token issue printed no token"

say "seeding $USERS users, $((2 * USERS)) device tokens and $RECORDS records with SQL"
t=$(date +%s.%N)
psql -d nimbus -c "
  INSERT INTO users (name, record_name) SELECT 'user' || lpad(g::text, 5, '0'), '_' || md5('user' || g) FROM generate_series(1, $USERS) g;
  INSERT INTO device_tokens (user_id, token_id, token_sha256, device_name, last_used_at)
    SELECT u.id, 'tok_bench_' || u.id || '_' || d, sha256(convert_to(u.name || d || random()::text, 'UTF8')), d, now() - random() * interval '1 day'
    FROM users u, unnest(ARRAY['mac', 'iphone']) d WHERE u.name LIKE 'user%';
  INSERT INTO databases (owner_user_id, container, environment, scope, change_seq)
    SELECT id, '$CONTAINER', 'development', 'private', 1 FROM users WHERE name LIKE 'user%';
  INSERT INTO zones (database_id, zone_name, change_seq, database_seq)
    SELECT id, '_defaultZone', $PER_USER, 1 FROM databases WHERE container = '$CONTAINER';
  INSERT INTO records (zone_id, record_name, record_type, fields, change_seq, created_at, created_by_device, created_by_user,
                       modified_at, modified_by_device, modified_by_user, deleted, expires_at)
    SELECT z.id, upper(regexp_replace(md5(z.id || '/' || g), '(.{8})(.{4})(.{4})(.{4})(.{12})', '\1-\2-\3-\4-\5')), 'BlockedAppEvent',
           CASE WHEN g % 50 = 0 THEN '{}'::jsonb ELSE jsonb_build_object(
             'appName', jsonb_build_object('type', 'STRING', 'value', 'Safari'),
             'bundleID', jsonb_build_object('type', 'STRING', 'value', 'com.apple.mobilesafari'),
             'deviceName', jsonb_build_object('type', 'STRING', 'value', 'Anna''s iPhone 15 Pro'),
             'timestamp', jsonb_build_object('type', 'TIMESTAMP', 'value', (extract(epoch FROM now()) * 1000)::int8 - g)) END,
           g, now() - interval '1 day', 'mac', '', now() - interval '1 day', 'mac', '', g % 50 = 0,
           CASE WHEN g % 50 = 0 THEN NULL ELSE now() + (g % 30) * interval '1 day' END
    FROM zones z, generate_series(1, $PER_USER) g;
  INSERT INTO device_zone_positions (token_id, zone_id, change_seq, synced_at)
    SELECT t.token_id, z.id, greatest(0, z.change_seq - 10), now() - interval '5 minutes'
    FROM device_tokens t JOIN databases d ON d.owner_user_id = t.user_id JOIN zones z ON z.database_id = d.id
    WHERE t.device_name = 'iphone';
" >/dev/null || die "seeding failed"
psql -d nimbus -c 'VACUUM ANALYZE' >/dev/null
say "seeded in $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN {printf "%.0f", b - a}') s; records table $(psql -d nimbus -At -c "SELECT pg_size_pretty(pg_total_relation_size('records'))")"

USER=user$(printf '%05d' $((USERS / 2)))
ZONE_QUERY="user=$USER&container=$CONTAINER&environment=development&zoneName=_defaultZone"
# page NAME HASH API-PATH: one line per page.
pages=(
  "overview|overview|/api/overview"
  "users|users|/api/users"
  "devices|users/$USER|/api/users/$USER/devices"
  "records|records?$ZONE_QUERY|/api/records?$ZONE_QUERY&limit=50"
  "schema|schema|/api/schema"
  "retention|retention|/api/retention"
  "storage|storage|/api/storage"
  "requests|requests|/api/requests?limit=200"
  "audit|audit|/api/audit"
  "configuration|configuration|/api/configuration"
)
if [ -n "${BENCH_CONSOLE_PAGES:-}" ]; then  # only these pages (names of the first column)
  chosen=()
  for entry in "${pages[@]}"; do
    if [[ " $BENCH_CONSOLE_PAGES " == *" ${entry%%|*} "* ]]; then chosen+=("$entry"); fi
  done
  [ "${#chosen[@]}" -gt 0 ] || die "BENCH_CONSOLE_PAGES='$BENCH_CONSOLE_PAGES' names no page"
  pages=("${chosen[@]}")
fi
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
render_ms() {  # render_ms HASH: the first render of a fresh load of the page, ms
  timeout 120 python3 Tests/integration/cdp.py --origin "$ADMIN" --out "$WORK/cdp" --timeout 100 --wait 60 "visit:/#/$1?token=$TOKEN" \
    >"$WORK/cdp.out" 2>&1 || die "Chromium failed on #/$1: $(tail -5 "$WORK/cdp.out")"
  sed -n 's/.* ready in \([0-9]*\) ms.*/\1/p' "$WORK/cdp.out" | head -1
}
api_ms() {  # api_ms PATH: curl's total time for one admin API request, ms
  curl -sS -o /dev/null --max-time 60 -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "$ADMIN$1" | awk '{printf "%.0f\n", $1 * 1000}'
}
mkdir -p "$WORK/cdp"
render_ms overview >/dev/null  # warm-up: Chromium's own first start, the server's first statements
sign_in=$(for ((r = 0; r < ROUNDS; r++)); do
  timeout 120 python3 Tests/integration/cdp.py --origin "$ADMIN" --out "$WORK/cdp" "visit:/" >"$WORK/cdp.out" 2>&1 || die "sign-in page"
  sed -n 's/.* ready in \([0-9]*\) ms.*/\1/p' "$WORK/cdp.out" | head -1
done | median)

printf '\nconsole first render, %s users, %s records (%s per user), median of %s fresh loads; %s\n' "$USERS" "$RECORDS" "$PER_USER" "$ROUNDS" \
  "commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '%-14s %12s %16s %8s\n' page "render ms" "its API call ms" "< 500?"
printf '%-14s %12s %16s %8s\n' "(sign-in)" "$sign_in" "-" "reference"
worst=0
for entry in "${pages[@]}"; do
  IFS='|' read -r name hash path <<<"$entry"
  render=$(for ((r = 0; r < ROUNDS; r++)); do render_ms "$hash"; done | median)
  call=$(for ((r = 0; r < ROUNDS; r++)); do api_ms "$path"; done | median)
  verdict=yes
  awk -v r="$render" 'BEGIN {exit !(r >= 500)}' && verdict=NO
  awk -v r="$render" -v w="$worst" 'BEGIN {exit !(r > w)}' && worst=$render
  printf '%-14s %12s %16s %8s\n' "$name" "$render" "$call" "$verdict"
done
printf 'slowest page: %s ms (target < 500 ms)\n' "$worst"
