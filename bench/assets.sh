#!/usr/bin/env bash
# Asset benchmark (issue 5, "Figures for the closing note"): upload and download MB/s of a 50 MiB
# asset through Nimbus beside psql's \copy of the same bytes into and out of a bytea column (the
# physical reference), both against ONE scratch PostgreSQL cluster; and nimbus's peak RSS during
# 8 concurrent 50 MiB uploads against its RSS just before.
#
#   bash bench/assets.sh
#
# 1. Installs what it needs (deploy/install-deps.sh: PostgreSQL server programs, curl) and builds
#    nimbus in release mode.
# 2. Starts one scratch PostgreSQL cluster (Unix socket only, temp dir; the embedded cluster's
#    settings, fsync and synchronous_commit on). Database `nimbus` serves `nimbus serve
#    --database-url` (release build, --max-asset-bytes = the asset size); database `ref` holds
#    the reference tables `ref_text (b bytea)` and `ref_bin (b bytea)`.
# 3. Memory (first, on the fresh server after a 1 MiB warm-up round trip): VmRSS before; then
#    BENCH_CONCURRENT (8) curl uploads of distinct BENCH_ASSET_MB files at once, VmRSS sampled
#    every 20 ms and VmHWM (reset through /proc/PID/clear_refs just before) read after; every
#    upload must answer 200 with its sha256sum. Growth = peak - before (target <= 64 MiB).
# 4. Throughput, BENCH_ROUNDS rounds, each with a fresh random file, in A-B / B-A order:
#    nimbus up    curl -T FILE (Content-Length) to an upload URL: transfer time only (curl's
#                 time_total; the URL is requested before)
#    nimbus down  curl GET downloadURL into a file (after a record saved the asset)
#    copy up      psql \copy ref_text(b) FROM a one-line text file `\\x<hex>` (hex prepared
#                 beforehand, not timed); also \copy ref_bin(b) FROM a PGCOPY binary file
#    copy down    psql \copy (SELECT b ...) TO a file, text (hex) and binary
#    psql runs are timed around the psql process (connection included, a few ms). MB/s count the
#    asset's bytes (MiB = 2^20). The ratio that the target (>= 0.5) applies to is nimbus over the
#    text \copy (the brief's reference); the binary \copy, which moves half the bytes, is printed
#    beside it. Medians over rounds. CPU seconds used by nimbus and PostgreSQL during each run are
#    printed (the machine is shared).
# 5. A summary block. Everything it starts is stopped by PID; the temp dir is removed.
#
# Knobs (environment): BENCH_ASSET_MB=50 BENCH_ROUNDS=3 BENCH_CONCURRENT=8 BENCH_RSS_TARGET_MB=64
#   BENCH_POOL_SIZE= BENCH_EVENT_LOOPS= (nimbus defaults) BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1
#   BENCH_KEEP=1 (keep the temp dir)
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_ASSET_MB=1 BENCH_ROUNDS=1 BENCH_CONCURRENT=2), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 90 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=assets
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 90 BENCH_ASSET_MB=1 BENCH_ROUNDS=1 BENCH_CONCURRENT=2 -- "$@"
ROOT=$PWD

ASSET_MB=${BENCH_ASSET_MB:-50}
ROUNDS=${BENCH_ROUNDS:-3}
CONCURRENT=${BENCH_CONCURRENT:-8}
RSS_TARGET_MB=${BENCH_RSS_TARGET_MB:-64}
POOL_SIZE=${BENCH_POOL_SIZE:-}
EVENT_LOOPS=${BENCH_EVENT_LOOPS:-}
SIZE=$((ASSET_MB * 1048576))
CONTAINER=iCloud.bench.Assets
TARGET=0.5

T0=$(date +%s)

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" NIMBUS_PID="" PG_BIN="" PG_DATA="" UPLOAD_PIDS=() SAMPLER_PID=""
stop_own_processes() {
  local pid
  stop_pid "$SAMPLER_PID" TERM 2
  for pid in "${UPLOAD_PIDS[@]}"; do stop_pid "$pid" TERM 2; done
  stop_pid "$NIMBUS_PID" TERM 30
}
on_exit_stop stop_own_processes

# ---------------------------------------------------------------- 1. dependencies and build
if [ -z "${BENCH_SKIP_INSTALL:-}" ]; then
  bash deploy/install-deps.sh
fi
pg_find_bin || die "PostgreSQL server programs not found (deploy/install-deps.sh)"
for tool in curl sha256sum base64 dd; do command -v "$tool" >/dev/null || die "$tool is not installed"; done
if command -v basenc >/dev/null; then
  to_hex() { basenc --base16 -w0 "$1" | tr 'A-F' 'a-f'; }
elif command -v xxd >/dev/null; then
  to_hex() { xxd -p "$1" | tr -d '\n'; }
else
  to_hex() { od -An -v -tx1 "$1" | tr -d ' \n'; }
fi

release_binary
rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
[ -z "$(git -C "$ROOT" status --porcelain -- Sources Package.swift migrations 2>/dev/null)" ] || rev+=" + uncommitted changes in Sources/migrations"
rev+=", binary of $(date -r "$NIMBUS_BIN" '+%F %T')"
[ -n "${BENCH_SKIP_BUILD:-}" ] && rev+=" (build skipped)"

WORK=$(mktemp -d /tmp/nimbus-assets-bench.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/files" "$WORK/out"
chmod 777 "$WORK/out"  # psql's \copy TO runs as us, but keep it simple for runuser setups too

# ---------------------------------------------------------------- 2. PostgreSQL, databases, nimbus
start_bench_postgres max_connections=200 fsync=on synchronous_commit=on
psql -d postgres -c 'CREATE DATABASE nimbus' -c 'CREATE DATABASE ref' >/dev/null
psql -d ref -c 'CREATE TABLE ref_text (id bigserial PRIMARY KEY, b bytea NOT NULL)' \
            -c 'CREATE TABLE ref_bin (id bigserial PRIMARY KEY, b bytea NOT NULL)' >/dev/null
PG_SETTINGS=$(psql -d postgres -At -F= -c "SELECT name, setting FROM pg_settings WHERE name IN
  ('fsync','synchronous_commit','shared_buffers','wal_level','max_wal_size','full_page_writes') ORDER BY name" | paste -sd' ')

DB_URL="postgresql:///nimbus?host=$SOCK&user=nimbus"
mkdir -p "$WORK/nimbus-data"
say "starting nimbus serve --database-url (db nimbus on the same cluster), --max-asset-bytes $SIZE"
"$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url "$DB_URL" --data-dir "$WORK/nimbus-data" --max-asset-bytes "$SIZE" --requests-per-second-per-token 0 \
  --user-quota-bytes $((SIZE * (CONCURRENT + 2 * ROUNDS + 4))) \
  ${POOL_SIZE:+--pool-size "$POOL_SIZE"} ${EVENT_LOOPS:+--event-loops "$EVENT_LOOPS"} </dev/null 2>"$WORK/nimbus.log" &
NIMBUS_PID=$!
PORT=""
for ((i = 0; i < 1200; i++)); do
  PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$WORK/nimbus.log" 2>/dev/null | head -1 | sed 's/.*://' || true)
  [ -n "$PORT" ] && break
  alive; sleep 0.1
done
[ -n "$PORT" ] || die "nimbus did not print 'listening on' within 120 s; log tail:$(printf '\n'; tail -30 "$WORK/nimbus.log")"
say "nimbus pid $NIMBUS_PID on port $PORT"
BASE=http://127.0.0.1:$PORT
API=$BASE/database/1/$CONTAINER/development/private
"$NIMBUS_BIN" user add bench --database-url "$DB_URL" >"$WORK/user.out" 2>&1 || { cat "$WORK/user.out" >&2; die "nimbus user add failed"; }
"$NIMBUS_BIN" token issue bench --device bench-assets --database-url "$DB_URL" >"$WORK/token.out" 2>&1 \
  || { cat "$WORK/token.out" >&2; die "nimbus token issue failed"; }
TOKEN=$(awk '/^token:/ {print $2}' "$WORK/token.out")
[ -n "$TOKEN" ] || die "no 'token:' line from nimbus token issue: $(cat "$WORK/token.out")"

# ---------------------------------------------------------------- helpers
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
# PostgreSQL: the postmaster with its reaped children (exited backends) plus the live children.
pg_ticks() {
  local pm t c
  pm=$(pg_pid); [ -n "$pm" ] || { echo 0; return; }
  t=$(proc_ticks "$pm" all)
  for c in $(cat /proc/"$pm"/task/*/children 2>/dev/null); do t=$((t + $(proc_ticks "$c"))); done
  echo "$t"
}
rss_kb() { awk -v k="${2:-VmRSS:}" '$1 == k {print $2; exit}' "/proc/$1/status" 2>/dev/null || echo 0; }
b64_sha256() { local hex; hex=$(sha256sum <"$1"); hex=${hex:0:64}; printf "$(sed 's/../\\x&/g' <<<"$hex")" | base64 -w0; }
json_str() { grep -o "\"$1\":\"[^\"]*\"" | head -n 1 | sed "s/^\"$1\":\"//; s/\"\$//"; }
mbps() { awk -v b="$1" -v s="$2" 'BEGIN {printf "%.1f", (s > 0 ? b / 1048576 / s : 0)}'; }

upload_url() {  # upload_url: a fresh upload URL
  local answer
  answer=$(curl -sS --max-time 30 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    --data '{"tokens":[{"recordType":"Blob","fieldName":"data"}]}' "$API/assets/upload") || die "assets/upload failed"
  printf '%s' "$answer" | json_str url
}
# nimbus_upload FILE OUT: uploads FILE (Content-Length); OUT gets the answer, prints curl's time_total.
nimbus_upload() {
  local url code_time
  url=$(upload_url); [ -n "$url" ] || die "no upload URL"
  code_time=$(curl -sS --max-time 600 -X POST -H "Authorization: Bearer $TOKEN" -T "$1" -o "$2" -w '%{http_code} %{time_total}' "$url") \
    || die "curl upload of $1 failed"
  [ "${code_time%% *}" = 200 ] || die "upload of $1: HTTP $code_time: $(head -c 300 "$2")"
  [ "$(json_str fileChecksum <"$2")" = "$(b64_sha256 "$1")" ] || die "upload of $1: wrong fileChecksum in $(head -c 300 "$2")"
  echo "${code_time#* }"
}
# download_url ANSWER NAME: saves a record with the uploaded asset of ANSWER; prints its downloadURL.
download_url() {
  local ck size receipt answer
  ck=$(json_str fileChecksum <"$1"); receipt=$(json_str receipt <"$1")
  size=$(grep -o '"size":[0-9]*' "$1" | head -n 1 | cut -d: -f2)
  answer=$(curl -sS --max-time 30 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    --data "{\"operations\":[{\"operationType\":\"forceReplace\",\"record\":{\"recordName\":\"$2\",\"recordType\":\"Blob\",\"fields\":{\"data\":{\"value\":{\"fileChecksum\":\"$ck\",\"size\":$size,\"receipt\":\"$receipt\"},\"type\":\"ASSETID\"}}}}]}" \
    "$API/records/modify") || die "records/modify failed"
  printf '%s' "$answer" | json_str downloadURL
}
# timed CMD...: runs CMD, prints its wall seconds.
timed() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null || die "$* failed"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}'
}
# pgcopy_binary FILE OUT: a PGCOPY binary file with one row holding FILE's bytes.
pgcopy_binary() {
  local n
  n=$(stat -c %s "$1")
  {
    printf 'PGCOPY\n\377\r\n\000'
    printf '\000\000\000\000\000\000\000\000'
    printf '\000\001'
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(( (n >> 24) & 255 )) $(( (n >> 16) & 255 )) $(( (n >> 8) & 255 )) $(( n & 255 )))"
    cat "$1"
    printf '\377\377'
  } >"$2"
}

RESULTS=$WORK/results   # "round what seconds nimbus_cpu_s pg_cpu_s other_cores"
: >"$RESULTS"
# measure ROUND WHAT CMD...: runs CMD (which prints wall seconds) with CPU accounting.
measure() {
  local round=$1 what=$2 n0 p0 b0 w0 secs n1 p1 b1 w1
  shift 2
  alive
  checkpoint
  n0=$(proc_ticks "$NIMBUS_PID"); p0=$(pg_ticks); b0=$(machine_busy); w0=$(date +%s.%N)
  secs=$("$@")
  # Let the postmaster reap psql's backend, whose CPU then shows in its children's times.
  sleep 0.3
  n1=$(proc_ticks "$NIMBUS_PID"); p1=$(pg_ticks); b1=$(machine_busy); w1=$(date +%s.%N)
  # "Everything else" is averaged over the whole measured window (the run, its checks, the pause).
  echo "$round $what $secs $(awk -v n=$((n1 - n0)) -v p=$((p1 - p0)) -v b=$((b1 - b0)) -v w="$(awk -v a="$w0" -v b="$w1" 'BEGIN {print b - a}')" -v hz="$CLK_TCK" 'BEGIN {
    o = (b - n - p) / hz; printf "%.2f %.2f %.2f", n / hz, p / hz, (w > 0 && o > 0 ? o / w : 0) }')" >>"$RESULTS"
  say "  round $round $what: $(mbps "$SIZE" "$secs") MB/s (${secs}s; CPU nimbus/pg $(tail -1 "$RESULTS" | awk '{print $4 "/" $5}') s, everything else $(tail -1 "$RESULTS" | awk '{print $6}') cores)"
}

# ---------------------------------------------------------------- 3. memory during concurrent uploads
say "warm-up: 1 MiB upload and download"
head -c 1048576 /dev/urandom >"$WORK/files/warm"
nimbus_upload "$WORK/files/warm" "$WORK/out/warm.json" >/dev/null
warm_url=$(download_url "$WORK/out/warm.json" warm)
curl -sS --max-time 60 -H "Authorization: Bearer $TOKEN" -o "$WORK/out/warm.down" "$warm_url" || die "warm-up download failed"
cmp -s "$WORK/files/warm" "$WORK/out/warm.down" || die "warm-up download differs"
say "writing $CONCURRENT random files of $ASSET_MB MiB"
for ((i = 1; i <= CONCURRENT; i++)); do head -c "$SIZE" /dev/urandom >"$WORK/files/c$i"; done
urls=()
for ((i = 1; i <= CONCURRENT; i++)); do urls+=("$(upload_url)"); done
sleep 1
rss_before=$(rss_kb "$NIMBUS_PID")
hwm_before=$(rss_kb "$NIMBUS_PID" VmHWM:)
hwm_reset=no
if echo 5 >"/proc/$NIMBUS_PID/clear_refs" 2>/dev/null; then hwm_reset=yes; fi
say "$CONCURRENT concurrent uploads of $ASSET_MB MiB; VmRSS before: ${rss_before} KB (VmHWM so far ${hwm_before} KB, reset: $hwm_reset)"
(
  trap 'exit 0' TERM
  while :; do awk '$1 == "VmRSS:" {print $2; exit}' "/proc/$NIMBUS_PID/status" 2>/dev/null; sleep 0.02; done
) >"$WORK/rss.samples" &
SAMPLER_PID=$!
t0=$(date +%s.%N); n0=$(proc_ticks "$NIMBUS_PID"); p0=$(pg_ticks)
UPLOAD_PIDS=()
for ((i = 1; i <= CONCURRENT; i++)); do
  curl -sS --max-time 900 -X POST -H "Authorization: Bearer $TOKEN" -T "$WORK/files/c$i" -o "$WORK/out/c$i.json" \
    -w '%{http_code} %{time_total}\n' "${urls[$((i - 1))]}" >"$WORK/out/c$i.status" 2>"$WORK/out/c$i.err" &
  UPLOAD_PIDS+=("$!")
done
for pid in "${UPLOAD_PIDS[@]}"; do wait "$pid" || true; done
UPLOAD_PIDS=()
t1=$(date +%s.%N); n1=$(proc_ticks "$NIMBUS_PID"); p1=$(pg_ticks)
sleep 0.1
stop_pid "$SAMPLER_PID" TERM 2; SAMPLER_PID=""
alive
rss_after=$(rss_kb "$NIMBUS_PID")
hwm_after=$(rss_kb "$NIMBUS_PID" VmHWM:)
rss_sampled_peak=$(sort -n "$WORK/rss.samples" | tail -n 1)
rss_samples=$(grep -c . "$WORK/rss.samples" || true)
rss_peak=$rss_sampled_peak
[ "$hwm_reset" = yes ] && [ "$hwm_after" -gt "$rss_peak" ] && rss_peak=$hwm_after
concurrent_ok=0
for ((i = 1; i <= CONCURRENT; i++)); do
  if [ "$(cut -d' ' -f1 "$WORK/out/c$i.status")" = 200 ] && [ "$(json_str fileChecksum <"$WORK/out/c$i.json")" = "$(b64_sha256 "$WORK/files/c$i")" ]; then
    concurrent_ok=$((concurrent_ok + 1))
  else
    say "concurrent upload $i: $(cat "$WORK/out/c$i.status" "$WORK/out/c$i.err" 2>/dev/null | tr '\n' ' ') $(head -c 200 "$WORK/out/c$i.json" 2>/dev/null)"
  fi
done
concurrent_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
concurrent_mbps=$(mbps $((SIZE * CONCURRENT)) "$concurrent_secs")
concurrent_cpu=$(awk -v n=$((n1 - n0)) -v p=$((p1 - p0)) -v hz="$CLK_TCK" 'BEGIN {printf "%.2f/%.2f", n / hz, p / hz}')
rss_growth_mb=$(awk -v a="$rss_peak" -v b="$rss_before" 'BEGIN {printf "%.1f", (a - b) / 1024}')
say "RSS: before ${rss_before} KB, peak ${rss_peak} KB (sampled ${rss_sampled_peak} KB over $rss_samples samples, VmHWM ${hwm_after} KB), after ${rss_after} KB;" \
    "growth ${rss_growth_mb} MiB; $concurrent_ok/$CONCURRENT uploads correct in ${concurrent_secs}s ($concurrent_mbps MB/s in all)"
rm -f "$WORK"/files/c*

# ---------------------------------------------------------------- 4. throughput
nimbus_up()   { nimbus_upload "$1" "$WORK/out/up-$2.json"; }
nimbus_down() {
  local t
  t=$(curl -sS --max-time 600 -H "Authorization: Bearer $TOKEN" -o "$WORK/out/down-$2" -w '%{http_code} %{time_total}' "$3") || die "download failed"
  [ "${t%% *}" = 200 ] || die "download: HTTP $t"
  echo "${t#* }"
}
copy_text_up()   { timed psql -d ref -c "\\copy ref_text(b) FROM '$1'"; }
copy_bin_up()    { timed psql -d ref -c "\\copy ref_bin(b) FROM '$1' WITH (FORMAT binary)"; }
copy_text_down() { timed psql -d ref -c "\\copy (SELECT b FROM ref_text WHERE id = $1) TO '$2'"; }
copy_bin_down()  { timed psql -d ref -c "\\copy (SELECT b FROM ref_bin WHERE id = $1) TO '$2' WITH (FORMAT binary)"; }

for ((r = 1; r <= ROUNDS; r++)); do
  f=$WORK/files/r$r
  head -c "$SIZE" /dev/urandom >"$f"
  # The reference's inputs, prepared untimed: COPY text (\\x + hex) and PGCOPY binary.
  { printf '\\\\x'; to_hex "$f"; printf '\n'; } >"$f.hex"
  pgcopy_binary "$f" "$f.bin"
  say "round $r of $ROUNDS ($(if ((r % 2)); then echo "nimbus first"; else echo "copy first"; fi))"
  run_nimbus() {
    measure "$r" nimbus_up nimbus_up "$f" "$r"
    local url
    url=$(download_url "$WORK/out/up-$r.json" "round-$r")
    [ -n "$url" ] || die "no downloadURL for round $r"
    measure "$r" nimbus_down nimbus_down "$f" "$r" "$url"
    cmp -s "$f" "$WORK/out/down-$r" || die "round $r: the nimbus download differs from the upload"
    rm -f "$WORK/out/down-$r"
  }
  run_copy() {
    measure "$r" copy_text_up copy_text_up "$f.hex"
    measure "$r" copy_bin_up copy_bin_up "$f.bin"
    local id
    id=$(psql -d ref -At -c 'SELECT max(id) FROM ref_text')
    measure "$r" copy_text_down copy_text_down "$id" "$WORK/out/copy-$r.hex"
    id=$(psql -d ref -At -c 'SELECT max(id) FROM ref_bin')
    measure "$r" copy_bin_down copy_bin_down "$id" "$WORK/out/copy-$r.bin"
    cmp -s "$f.hex" "$WORK/out/copy-$r.hex" || die "round $r: the text \\copy out differs from what went in"
    cmp -s "$f.bin" "$WORK/out/copy-$r.bin" || die "round $r: the binary \\copy out differs from what went in"
    rm -f "$WORK/out/copy-$r.hex" "$WORK/out/copy-$r.bin"
  }
  if ((r % 2)); then run_nimbus; run_copy; else run_copy; run_nimbus; fi
  rm -f "$f" "$f.hex" "$f.bin"
done

# ---------------------------------------------------------------- 5. report
alive
problem_pattern='^(warning|error) |"level":"(warning|error)"|Fatal error|panic|Segmentation fault|Illegal instruction'
nimbus_log_problems=$(grep -m 5 -E "$problem_pattern" "$WORK/nimbus.log" | cut -c1-300 || true)
stored=$(psql -d nimbus -At -c "SELECT count(*) || ' assets, ' || pg_size_pretty(COALESCE(sum(size), 0)) FROM assets WHERE complete")
median() {  # median WHAT: median seconds of WHAT over rounds
  awk -v w="$1" '$2 == w {print $3}' "$RESULTS" | sort -g | awk '{a[NR] = $1} END {if (NR == 0) print 0; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.4f", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
for w in nimbus_up nimbus_down copy_text_up copy_bin_up copy_text_down copy_bin_down; do
  eval "s_$w=\$(median $w)"
  eval "m_$w=\$(mbps $SIZE \"\$s_$w\")"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }
verdict() { if awk "BEGIN {exit !($1)}"; then echo ok; else echo MISSED; fi; }
up_ratio=$(ratio "$m_nimbus_up" "$m_copy_text_up"); down_ratio=$(ratio "$m_nimbus_down" "$m_copy_text_down")
up_ratio_bin=$(ratio "$m_nimbus_up" "$m_copy_bin_up"); down_ratio_bin=$(ratio "$m_nimbus_down" "$m_copy_bin_down")
{
  echo
  echo "Per run (MB/s of the ${ASSET_MB} MiB asset; CPU seconds used by nimbus and PostgreSQL; cores used by everything"
  echo "else on the machine, the client (curl, psql) included):"
  printf '  %5s %-15s %9s %9s %11s %9s %11s\n' round run seconds MB/s nimbus_cpu pg_cpu else_cores
  while read -r round what secs ncpu pcpu other; do
    printf '  %5s %-15s %9s %9s %11s %9s %11s\n' "$round" "$what" "$secs" "$(mbps "$SIZE" "$secs")" "$ncpu" "$pcpu" "$other"
  done <"$RESULTS"
  echo
  echo "================ Nimbus asset benchmark summary ================"
  echo "machine: $(nproc) cores, kernel $(uname -r); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "nimbus build: $rev"
  echo "PostgreSQL $PG_VERSION (scratch cluster, Unix socket): $PG_SETTINGS"
  echo "asset: ${ASSET_MB} MiB of random bytes; rounds: $ROUNDS (medians); nimbus: curl -T (Content-Length) / curl GET, loopback"
  printf '  %-34s %9s %9s\n' "" upload download
  printf '  %-34s %9s %9s\n' "nimbus (MB/s)" "$m_nimbus_up" "$m_nimbus_down"
  printf '  %-34s %9s %9s\n' "psql \\copy, text (hex) (MB/s)" "$m_copy_text_up" "$m_copy_text_down"
  printf '  %-34s %9s %9s\n' "psql \\copy, binary (MB/s)" "$m_copy_bin_up" "$m_copy_bin_down"
  echo "  nimbus / text \\copy: upload $up_ratio (target >= $TARGET: $(verdict "$up_ratio >= $TARGET")), download $down_ratio (target >= $TARGET: $(verdict "$down_ratio >= $TARGET"))"
  echo "  nimbus / binary \\copy (stricter, not the target): upload $up_ratio_bin, download $down_ratio_bin"
  echo "memory: $CONCURRENT concurrent uploads of ${ASSET_MB} MiB ($concurrent_ok/$CONCURRENT answered 200 with the right checksum; ${concurrent_secs}s, $concurrent_mbps MB/s in all; CPU nimbus/pg $concurrent_cpu s)"
  echo "  nimbus VmRSS before ${rss_before} KB, peak ${rss_peak} KB (max of $rss_samples VmRSS samples ${rss_sampled_peak} KB; VmHWM after reset ${hwm_after} KB, reset: $hwm_reset), after ${rss_after} KB"
  echo "  peak growth: ${rss_growth_mb} MiB (target <= $RSS_TARGET_MB MiB: $(verdict "$rss_growth_mb <= $RSS_TARGET_MB"))"
  echo "stored at the end: $stored; nimbus log problems: ${nimbus_log_problems:-none}"
  echo "took $(( $(date +%s) - T0 ))s"
}
[ "$concurrent_ok" = "$CONCURRENT" ] || die "$((CONCURRENT - concurrent_ok)) of the concurrent uploads failed"
