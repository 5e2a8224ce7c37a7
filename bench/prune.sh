#!/usr/bin/env bash
# Retention benchmark (issue 6, "Figures for the closing note"): how fast `nimbus prune` deletes
# expired records, and what it does to the latency of concurrent writes.
#
#   bash bench/prune.sh                      # 1,000,000 expired events; bounded to ~5 minutes
#   BENCH_RECORDS=100000 bash bench/prune.sh # smaller
#
# 1. Installs what it needs (deploy/install-deps.sh) and builds nimbus in release mode.
# 2. Starts one scratch PostgreSQL cluster (Unix socket only, temp dir; the embedded cluster's
#    settings with default durability: fsync on, synchronous_commit on) and `nimbus serve
#    --database-url ... --prune-interval 0s` (release build, the server's own job off). A user,
#    a device token, the AppLocker schema (deploy/schemas/applocker.json) and zone `events`.
# 3. Loads BENCH_RECORDS expired BlockedAppEvent records (created and timestamped 31 days ago,
#    UUID-like names as the apps use, ~250-byte fields) into that ONE zone directly with SQL
#    (INSERT ... SELECT generate_series), then VACUUM ANALYZE and CHECKPOINT.
# 4. Starts the write load (bench/pruneload.c: BENCH_CLIENTS keep-alive clients, each sending
#    records/modify with one `create` of a fresh, unexpired BlockedAppEvent into the same zone,
#    back to back), lets it warm up, measures BENCH_REF_SECONDS of it as the reference, then runs
#    `nimbus prune` (the CLI, default options, batches of 500) while the load goes on, and stops
#    the load when the prune ends.
# 5. Reports: expired records pruned per second (CLI wall time, and the CLI's own "done in"),
#    write latency p50/p90/p99/p99.9/max and requests/s during the prune versus the reference
#    window just before it (the last min(BENCH_REF_SECONDS, prune duration) seconds before the
#    prune; the summary says when it is shorter than the prune), the worst 1-second window, CPU of nimbus, PostgreSQL,
#    the prune CLI and other load, and checks: every expired record deleted, every acknowledged
#    write still live, no errors.
#
# Knobs (environment): BENCH_RECORDS=1000000 BENCH_CLIENTS=4 BENCH_REF_SECONDS=60 BENCH_WARMUP=5
#   BENCH_PRUNE_TIMEOUT=150 (the prune is stopped after this; the figures then cover what it deleted
#   so far and the run exits 1)
#   BENCH_POOL_SIZE= BENCH_EVENT_LOOPS= (nimbus defaults) BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1
#   BENCH_PG_OPTS="-c jit=off" (extra postgres settings; PostgreSQL's defaults otherwise, as Nimbus's
#   embedded cluster uses them: jit is on, and at 1M rows it JIT-compiles every batch query) BENCH_KEEP=1 (keep the temp dir)
# With pg_stat_statements available (postgresql-contrib), the report lists the statements that
# took the prune's time (and the writers'), plus the WAL written and checkpoints during it.
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_RECORDS=2000 BENCH_CLIENTS=2 BENCH_REF_SECONDS=2 BENCH_WARMUP=1 BENCH_PRUNE_TIMEOUT=60), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 90 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=prune
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 90 BENCH_RECORDS=2000 BENCH_CLIENTS=2 BENCH_REF_SECONDS=2 BENCH_WARMUP=1 BENCH_PRUNE_TIMEOUT=60 -- "$@"
ROOT=$PWD

RECORDS=${BENCH_RECORDS:-1000000}
CLIENTS=${BENCH_CLIENTS:-4}
REF_SECONDS=${BENCH_REF_SECONDS:-60}
WARMUP=${BENCH_WARMUP:-5}
PRUNE_TIMEOUT=${BENCH_PRUNE_TIMEOUT:-150}
POOL_SIZE=${BENCH_POOL_SIZE:-}
EVENT_LOOPS=${BENCH_EVENT_LOOPS:-}
CONTAINER=iCloud.com.mirxa.AppLocker
ZONE=events

T0=$(date +%s)

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" NIMBUS_PID="" LOAD_PID="" PRUNE_PID="" PG_BIN="" PG_DATA=""
PG_OPTS_EXTRA=${BENCH_PG_OPTS:-}
stop_own_processes() {
  stop_pid "$PRUNE_PID" TERM 10
  stop_pid "$LOAD_PID" TERM 10
  stop_pid "$NIMBUS_PID" TERM 30
}
on_exit_stop stop_own_processes

# ---------------------------------------------------------------- 1. dependencies and build
if [ -z "${BENCH_SKIP_INSTALL:-}" ]; then
  bash deploy/install-deps.sh
fi
pg_find_bin || die "PostgreSQL server programs not found (deploy/install-deps.sh)"
command -v curl >/dev/null || die "curl is not installed"

release_binary
rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
[ -z "$(git -C "$ROOT" status --porcelain -- Sources Package.swift migrations 2>/dev/null)" ] || rev+=" + uncommitted changes in Sources/migrations"
rev+=", binary of $(date -r "$NIMBUS_BIN" '+%F %T')"
[ -n "${BENCH_SKIP_BUILD:-}" ] && rev+=" (build skipped)"

WORK=$(mktemp -d /tmp/nimbus-prune-bench.XXXXXX)
chmod 755 "$WORK"
compile_c "$WORK/pruneload" bench/pruneload.c -pthread
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# ---------------------------------------------------------------- 2. PostgreSQL and nimbus
pg_settings=(max_connections=200 fsync=on synchronous_commit=on)
HAVE_PGSS=""
if [ -f "$PG_BIN/../lib/pg_stat_statements.so" ]; then
  pg_settings+=(shared_preload_libraries=pg_stat_statements pg_stat_statements.track=top)
  HAVE_PGSS=1
fi
start_bench_postgres "${pg_settings[@]}" --opts "$PG_OPTS_EXTRA"
psql -d postgres -c 'CREATE DATABASE nimbus' >/dev/null
[ -n "$HAVE_PGSS" ] && psql -d nimbus -c 'CREATE EXTENSION pg_stat_statements' >/dev/null
PG_SETTINGS=$(psql -d postgres -At -F= -c "SELECT name, setting FROM pg_settings WHERE name IN
  ('fsync','synchronous_commit','shared_buffers','max_wal_size','autovacuum','full_page_writes','jit') ORDER BY name" | paste -sd' ')
DB_URL="postgresql:///nimbus?host=$SOCK&user=nimbus"

mkdir -p "$WORK/nimbus-data"
say "starting nimbus serve --database-url --prune-interval 0s"
"$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url "$DB_URL" --data-dir "$WORK/nimbus-data" --prune-interval 0s --requests-per-second-per-token 0 \
  ${POOL_SIZE:+--pool-size "$POOL_SIZE"} ${EVENT_LOOPS:+--event-loops "$EVENT_LOOPS"} </dev/null 2>"$WORK/nimbus.log" &
NIMBUS_PID=$!
PORT=""
for ((i = 0; i < 1200; i++)); do
  PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$WORK/nimbus.log" 2>/dev/null | head -1 | sed 's/.*://' || true)
  [ -n "$PORT" ] && break
  alive; sleep 0.1
done
[ -n "$PORT" ] || die "nimbus did not print 'listening on' within 120 s"
say "nimbus pid $NIMBUS_PID on port $PORT"
admin user add bench >"$WORK/user.out" 2>&1 || { cat "$WORK/user.out" >&2; die "nimbus user add failed"; }
admin token issue bench --device bench-writer >"$WORK/token.out" 2>&1 || { cat "$WORK/token.out" >&2; die "nimbus token issue failed"; }
TOKEN=$(awk '/^token:/ {print $2}' "$WORK/token.out")
[ -n "$TOKEN" ] || die "no 'token:' line from nimbus token issue"
admin schema import deploy/schemas/applocker.json >"$WORK/schema.out" 2>&1 || { cat "$WORK/schema.out" >&2; die "schema import failed"; }
BASE=http://127.0.0.1:$PORT/database/1/$CONTAINER/development/private
code=$(curl -sS -o "$WORK/zones.json" -w '%{http_code}' --max-time 30 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  --data "{\"operations\":[{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"$ZONE\"}}}]}" "$BASE/zones/modify") || die "zones/modify failed"
[ "$code" = 200 ] || die "zones/modify: HTTP $code $(head -c 300 "$WORK/zones.json")"

# ---------------------------------------------------------------- 3. the expired records
say "loading $RECORDS expired BlockedAppEvent records into zone $ZONE with SQL"
t=$(date +%s.%N)
psql -d nimbus -c "
  WITH z AS (
    UPDATE zones SET change_seq = change_seq + $RECORDS
    WHERE zone_name = '$ZONE' AND database_id = (SELECT id FROM databases WHERE container = '$CONTAINER')
    RETURNING id, change_seq
  )
  INSERT INTO records (zone_id, record_name, record_type, fields, change_seq, created_at, created_by_device,
                       created_by_user, modified_at, modified_by_device, modified_by_user, deleted, expires_at)
  SELECT z.id, upper(regexp_replace(md5(g::text), '(.{8})(.{4})(.{4})(.{4})(.{12})', '\1-\2-\3-\4-\5')), 'BlockedAppEvent',
         jsonb_build_object(
           'appName', jsonb_build_object('type', 'STRING', 'value', 'Safari'),
           'bundleID', jsonb_build_object('type', 'STRING', 'value', 'com.apple.mobilesafari'),
           'deviceName', jsonb_build_object('type', 'STRING', 'value', 'Alice''s iPhone 15 Pro'),
           'timestamp', jsonb_build_object('type', 'TIMESTAMP', 'value',
               (extract(epoch FROM now() - interval '31 days') * 1000)::int8 + g)),
         z.change_seq - $RECORDS + g,
         now() - interval '31 days', 'seed', (SELECT record_name FROM users WHERE name = 'bench'),
         now() - interval '31 days', 'seed', (SELECT record_name FROM users WHERE name = 'bench'),
         false, now() - interval '1 day'
  FROM z, generate_series(1, $RECORDS) g" >/dev/null || die "loading the expired records failed"
load_secs=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
psql -d nimbus -c 'VACUUM ANALYZE records' -c CHECKPOINT >/dev/null
table_mb=$(psql -d nimbus -At -c "SELECT round(pg_total_relation_size('records') / 1048576.0)")
say "loaded in ${load_secs}s; records table with indexes: ${table_mb} MB"

# ---------------------------------------------------------------- measurement helpers
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
pg_ticks() {  # the postmaster with its reaped children plus the live children
  local pm t c
  pm=$(pg_pid); [ -n "$pm" ] || { echo 0; return; }
  t=$(proc_ticks "$pm" all)
  for c in $(cat /proc/"$pm"/task/*/children 2>/dev/null); do t=$((t + $(proc_ticks "$c"))); done
  echo "$t"
}
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
cpu_mark() { echo "$(proc_ticks "$NIMBUS_PID") $(pg_ticks) $(machine_busy) $(proc_ticks "$LOAD_PID") $(date +%s.%N)"; }

# ---------------------------------------------------------------- 4. load, reference, prune
max_load=$((WARMUP + REF_SECONDS + PRUNE_TIMEOUT + 30))
say "write load: $CLIENTS clients, 1-record creates into zone $ZONE; ${WARMUP}s warm-up, ${REF_SECONDS}s reference"
"$WORK/pruneload" 127.0.0.1 "$PORT" "/database/1/$CONTAINER/development/private/records/modify" "$TOKEN" \
  "$CLIENTS" "$max_load" "$ZONE" w "$WORK/samples.txt" >"$WORK/load.out" 2>"$WORK/load.err" &
LOAD_PID=$!
sleep "$WARMUP"
alive
REF_START=$(now_ms)
ref_cpu0=$(cpu_mark)
sleep "$REF_SECONDS"
ref_cpu1=$(cpu_mark)
alive
kill -0 "$LOAD_PID" 2>/dev/null || die "the load generator died: $(cat "$WORK/load.err")"

say "nimbus prune (CLI, default options) while the load goes on"
[ -n "$HAVE_PGSS" ] && psql -d nimbus -c 'SELECT pg_stat_statements_reset()' >/dev/null
wal0=$(psql -d nimbus -At -c 'SELECT pg_current_wal_lsn()')
ckpt0=$(psql -d nimbus -At -c 'SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter')
PRUNE_START=$(now_ms)
"$NIMBUS_BIN" prune --database-url "$DB_URL" >"$WORK/prune.out" 2>"$WORK/prune.err" &
PRUNE_PID=$!
prune_cpu0=$(cpu_mark)
prune_timed_out=""
while kill -0 "$PRUNE_PID" 2>/dev/null; do
  if [ $(( $(now_ms) - PRUNE_START )) -gt $((PRUNE_TIMEOUT * 1000)) ]; then
    prune_timed_out=1; say "the prune is still running after ${PRUNE_TIMEOUT}s; stopping it"; stop_pid "$PRUNE_PID" TERM 10; break
  fi
  prune_ticks_last=$(proc_ticks "$PRUNE_PID")
  sleep 0.1
done
prune_rc=0
[ -n "$prune_timed_out" ] || wait "$PRUNE_PID" || prune_rc=$?
PRUNE_PID=""
PRUNE_END=$(now_ms)
prune_cpu1=$(cpu_mark)
wal_mb=$(psql -d nimbus -At -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal0') / 1048576.0)")
ckpts=$(( $(psql -d nimbus -At -c 'SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter') - ckpt0 ))
STMTS=""
if [ -n "$HAVE_PGSS" ]; then
  STMTS=$(psql -d nimbus -At -F'|' -c "SELECT calls, round(total_exec_time::numeric / 1000, 1), round((total_exec_time / greatest(calls, 1))::numeric, 2),
      round(100 * total_exec_time::numeric / greatest(sum(total_exec_time) OVER (), 1)), rows, shared_blks_read, shared_blks_dirtied,
      round(wal_bytes / 1048576.0), regexp_replace(left(query, 110), '\s+', ' ', 'g')
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'nimbus') AND calls > 0
    ORDER BY total_exec_time DESC LIMIT 8" | awk -F'|' '{printf "    %7s %8ss %8sms %3s%% rows %-8s read %-7s dirtied %-7s wal %5sMB  %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}')
fi
kill -TERM "$LOAD_PID"
wait "$LOAD_PID" || say "the load generator exited $?"
LOAD_PID=""
alive
prune_secs=$(awk -v a="$PRUNE_START" -v b="$PRUNE_END" 'BEGIN {printf "%.2f", (b - a) / 1000}')
say "prune ended after ${prune_secs}s (exit $prune_rc)"

# ---------------------------------------------------------------- 5. checks and figures
left_expired=$(psql -d nimbus -At -c "SELECT count(*) FROM records WHERE created_by_device = 'seed' AND NOT deleted")
tombstones=$(psql -d nimbus -At -c "SELECT count(*) FROM records WHERE created_by_device = 'seed' AND deleted")
writes_live=$(psql -d nimbus -At -c "SELECT count(*) FROM records WHERE record_name LIKE 'w-%' AND NOT deleted")
writes_gone=$(psql -d nimbus -At -c "SELECT count(*) FROM records WHERE record_name LIKE 'w-%' AND deleted")
writes_ok=$(tr ' ' '\n' <"$WORK/load.out" | awk -F= '$1 == "ok" {print $2}')
cli_done=$(sed -n 's/^done in \([0-9.]*\) s$/\1/p' "$WORK/prune.out")
cli_deleted=$(awk -F'records=' '/ zone='"$ZONE"' type=BlockedAppEvent: deleted / {split($2, a, " "); t += a[1]} END {print t + 0}' "$WORK/prune.out")
progress_lines=$(grep -c '^pruned ' "$WORK/prune.out" || true)

# window START_MS END_MS: latency figures of the requests that started in [START, END)
window() {
  local a=$1 b=$2 head
  head=$(awk -v a="$a" -v b="$b" -v out="$WORK/window.lat" '$1 >= a && $1 < b {
      n++; print $2 > out; if ($3 != 200) bad++; if ($4 > 0) items++; cnt[int(($1 - a) / 1000)]++ }
    END {
      # the 1-second slice with the fewest requests started (a stall shows up as a gap)
      min = -1; for (s = 0; s < int((b - a) / 1000); s++) if (min < 0 || cnt[s] + 0 < min) { min = cnt[s] + 0; at = s }
      printf "%d %d %d %d %d", n, bad + 0, items + 0, min, at }' "$WORK/samples.txt")
  [ -f "$WORK/window.lat" ] || { echo "n=0"; return; }
  sort -g "$WORK/window.lat" | awk -v head="$head" -v a="$a" -v b="$b" '{ lat[++n] = $1 }
    END {
      split(head, h, " ")
      printf "n=%d rps=%.1f", n, n / ((b - a) / 1000)
      split("p50 0.50 p90 0.90 p99 0.99 p999 0.999", q, " ")
      for (i = 1; i < 8; i += 2) { k = int(q[i + 1] * (n - 1) + 1.5); if (k > n) k = n; printf " %s=%.1f", q[i], lat[k] }
      printf " max=%.1f non200=%d item_errors=%d min_per_s=%d at_s=%d\n", lat[n], h[2], h[3], h[4], h[5] }'
  rm -f "$WORK/window.lat"
}
duration_ms=$((PRUNE_END - PRUNE_START))
ref_ms=$((duration_ms < REF_SECONDS * 1000 ? duration_ms : REF_SECONDS * 1000))
REF_FROM=$((PRUNE_START - ref_ms))
during=$(window "$PRUNE_START" "$PRUNE_END")
reference=$(window "$REF_FROM" "$PRUNE_START")
f() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k {print $2; exit}'; }
cores() {  # cores MARK0 MARK1: nimbus / postgres / load generator / other, in cores
  awk -v m0="$1" -v m1="$2" -v hz="$CLK_TCK" -v extra="${3:-0}" 'BEGIN {
    split(m0, a, " "); split(m1, b, " "); w = b[5] - a[5]
    n = (b[1] - a[1]) / hz / w; p = (b[2] - a[2]) / hz / w; busy = (b[3] - a[3]) / hz / w; l = (b[4] - a[4]) / hz / w; x = extra / hz / w
    o = busy - n - p - l - x; if (o < 0) o = 0
    printf "nimbus %.2f, postgres %.2f, load %.2f%s, other %.2f", n, p, l, (extra > 0 ? sprintf(", prune CLI %.2f", x) : ""), o }'
}
rate=$(awk -v n="$((RECORDS - left_expired))" -v s="$prune_secs" 'BEGIN {printf "%.0f", (s > 0 ? n / s : 0)}')
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b > 0 ? a / b : 0)}'; }
problems=$(grep -cE '^(warning|error) |Fatal error|panic' "$WORK/nimbus.log" || true)

{
  echo
  echo "================ Nimbus prune benchmark ================"
  echo "machine: $(nproc) cores, kernel $(uname -r), load average now $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "nimbus build: $rev"
  echo "postgres $PG_VERSION (scratch cluster, Unix socket): $PG_SETTINGS"
  echo "data: $RECORDS expired BlockedAppEvent records in ONE zone, loaded with SQL in ${load_secs}s (records table + indexes ${table_mb} MB)"
  echo "prune: \`nimbus prune\` (CLI, defaults: batches of 500, one transaction per batch) exit $prune_rc${prune_timed_out:+ (TIMED OUT after ${PRUNE_TIMEOUT}s)}"
  echo "  wall ${prune_secs}s (CLI says: done in ${cli_done:-?} s); deleted $cli_deleted (report), $tombstones tombstones, $left_expired expired left; $progress_lines progress lines"
  echo "  => $rate expired records pruned per second"
  echo "  CPU during the prune (cores): $(cores "$prune_cpu0" "$prune_cpu1" "${prune_ticks_last:-0}")"
  echo "  WAL written during the prune: ${wal_mb} MB; checkpoints: $ckpts"
  if [ -n "$STMTS" ]; then
    echo "  statements during the prune (pg_stat_statements, prune and writers; calls, total, mean, share of time, rows, blocks read/dirtied, WAL):"
    printf '%s\n' "$STMTS"
  fi
  echo "writes: $CLIENTS keep-alive clients, records/modify with 1 create each, same zone, back to back (bench/pruneload.c)"
  echo "  reference, $((ref_ms / 1000))s just before the prune$( [ "$ref_ms" -lt "$duration_ms" ] && echo " (shorter than the prune: BENCH_REF_SECONDS=$REF_SECONDS)"):"
  echo "    $reference"
  echo "    CPU (cores, whole ${REF_SECONDS}s reference): $(cores "$ref_cpu0" "$ref_cpu1")"
  echo "  during the prune (${prune_secs}s):"
  echo "    $during"
  echo "  p99 during / reference: $(f "$during" p99) / $(f "$reference" p99) ms = x$(ratio "$(f "$during" p99)" "$(f "$reference" p99)");" \
       "p50 x$(ratio "$(f "$during" p50)" "$(f "$reference" p50)"); max $(f "$during" max) ms vs $(f "$reference" max) ms;" \
       "throughput x$(ratio "$(f "$during" rps)" "$(f "$reference" rps)")"
  echo "checks: expired left $left_expired (want 0); tombstones $tombstones (want $RECORDS); acknowledged writes $writes_ok," \
       "live $writes_live, deleted $writes_gone (want live = acknowledged, deleted 0); load generator: $(cat "$WORK/load.out")"
  echo "nimbus log warnings/errors: $problems; prune stderr: $(head -c 300 "$WORK/prune.err" | tr '\n' ' ')"
  echo "wall time: $(( $(date +%s) - T0 ))s"
  echo "========================================================"
}
ok=1
[ "$left_expired" = 0 ] && [ "$tombstones" = "$RECORDS" ] && [ "$writes_gone" = 0 ] && [ "$writes_live" = "$writes_ok" ] && [ "$prune_rc" = 0 ] || ok=""
[ -n "$ok" ] || die "a check failed (see above)${prune_timed_out:+: the prune did not finish within BENCH_PRUNE_TIMEOUT=${PRUNE_TIMEOUT}s}"
