#!/usr/bin/env bash
# NimbusKit's costs beside a raw client doing the same requests (issue: NimbusKit figures).
#
#   bash bench/client.sh
#
# 1. Builds nimbus and nimbus-sync (release), starts `nimbus serve --data-dir` (embedded
#    PostgreSQL, default durability) on a loopback port, a user with two device tokens.
# 2. Initial sync: loads BENCH_CLIENT_RECORDS (100,000) records into zone `big` (raw records/modify,
#    400 per request), then, alternating twice, a raw records/changes reader (URLSession +
#    JSONSerialization, pages of 400) and a fresh SyncEngine's fetchChanges, each in its own process:
#    records/s and the process's peak resident memory (target: engine ≥ 0.5× raw, ≤ 100 MB); before
#    them in each round the byte-counting reader (bench/changesread.c: libcurl, the same pages, no
#    JSON parsing: what the server and loopback alone take; target: engine ≥ 0.5× it, < 4 s for 100,000).
# 3. Outbox: BENCH_CLIENT_OUTBOX (10,000) small records enqueued (100 per durable enqueue) and sent
#    until acknowledged, beside raw records/modify of the same batches (target ≥ 0.5×).
# 4. Live: BENCH_CLIENT_LIVE (1,000) writes by one device, each delivered to a live engine of
#    another: p50/p99 from the writer's acknowledgement to the engine's apply.
# 5. Assets: 10 × 1 MiB downloaded by a debug and a release nimbus-sync (asset_downloads) beside
#    plain URLSession.
#
# 7. Encrypted vs plain (issue 30, in the same run): BENCH_CLIENT_RECORDS records like step 2's with
#    `title` encrypted (another type, zone `sealed`, loaded through NimbusKit with the key of
#    NIMBUS_KEY_FILE) fetched by the engine in the same rounds as the plain zone (records/s,
#    target ≥ 0.8× plain); one BENCH_CLIENT_E2E_ASSET_BYTES (50 MiB) asset uploaded and downloaded
#    into an empty cache, plain and as an encrypted asset field (sealed, opened), each in its own
#    process, twice: seconds (target ≥ 0.8× plain's speed; the download's CPU seconds beside them)
#    and peak memory (≤ plain + 16 MiB). The
#    server takes assets up to 64 MiB here: the sealed file is 21 bytes + 16 per 64 KiB longer.
#    `bash bench/client.sh e2e-asset` runs only this asset part (the server, the asset plain and
#    sealed, BENCH_CLIENT_E2E_ROUNDS (2) rounds; no records, outbox, live or downloads): its rows alone.
#
# 6. Enqueue (issue 31, `enqueue_figures`): BENCH_CLIENT_ENQUEUES (1,000) single durable enqueues at
#    100 and at 10,000 pending (offline, nothing sent): µs and bytes written per enqueue (write(2)
#    bytes and the bytes the kernel sent to the disk), beside appending the same bytes to a file
#    with one fdatasync each (the physical floor), in the same run.
#
#    `bash bench/client.sh enqueue` runs only this part (no server; BENCH_SYNC_BIN picks the
#    nimbus-sync binary); BENCH_SMOKE=1 (or --smoke after it) makes it tiny (20 enqueues at 100
#    and 1,000 pending), as the whole bench's smoke mode does.
#
# `bash bench/client.sh sync` (or `first-sync`) runs only the initial-sync part (steps 1, 2 and step
#    7's encrypted first sync, BENCH_CLIENT_ROUNDS rounds, default 2, each the byte-counting reader,
#    the raw reader, the engine plain and the engine encrypted, one process each) and, after it,
#    `nimbus-sync bench-e2e-open` (no server): the CPU ns per record of decoding and opening a page,
#    plain beside one encrypted field, in one process.
#
# Knobs: BENCH_CLIENT_RECORDS BENCH_CLIENT_ROUNDS BENCH_CLIENT_OUTBOX BENCH_CLIENT_LIVE BENCH_CLIENT_ENQUEUES BENCH_CLIENT_ASSETS
#   BENCH_CLIENT_ASSET_BYTES BENCH_CLIENT_E2E_ASSET_BYTES BENCH_SKIP_INSTALL=1
#   BENCH_SKIP_BUILD=1 BENCH_KEEP=1 BENCH_NIMBUS_BIN=path (and BENCH_SYNC_BIN=path; default: the
#   nimbus-sync beside it; BENCH_DEBUG_SYNC_BIN=path: step 5's debug nimbus-sync, default the debug build's).
#   Loopback only; every phase is bounded in time.
# BENCH_CLIENT_CORE=1: steps 2-4 only (initial sync with the byte counter, outbox, live), through
#   the nimbus-sync subcommands every build since the NimbusKit figures has (bench-raw-modify,
#   bench-raw-fetch, bench-fetch, bench-outbox, bench-live): how an older build is compared with
#   this one (BENCH_NIMBUS_BIN and BENCH_SYNC_BIN of that build; its report has those rows only).
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_CLIENT_RECORDS=800 BENCH_CLIENT_OUTBOX=200 BENCH_CLIENT_LIVE=20
#   BENCH_CLIENT_ASSETS=3), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 120 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=client
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
# `bash bench/client.sh enqueue [--smoke]`: part 6 alone (below).
# `bash bench/client.sh e2e-asset`: step 7's asset rows alone (below).
MODE=""
case "${1:-}" in
  enqueue | e2e-asset) MODE=$1; shift ;;
  sync | first-sync) MODE=sync; shift ;;
esac
smoke_mode 120 BENCH_CLIENT_RECORDS=800 BENCH_CLIENT_OUTBOX=200 BENCH_CLIENT_LIVE=20 BENCH_CLIENT_ASSETS=3 \
  BENCH_CLIENT_E2E_ASSET_BYTES=1048576 -- "$@"

RECORDS=${BENCH_CLIENT_RECORDS:-100000}
CORE=${BENCH_CLIENT_CORE:-}
OUTBOX=${BENCH_CLIENT_OUTBOX:-10000}
LIVE=${BENCH_CLIENT_LIVE:-1000}
export NIMBUS_CONTAINER=iCloud.bench.Client

WORK="" NIMBUS_PID="" DATA=""
cleanup() {
  local rc=$?
  set +e
  stop_pid "$NIMBUS_PID" TERM 30
  remove_embedded_cluster
  if [ -n "$WORK" ] && [ -z "${BENCH_KEEP:-}" ]; then rm -rf -- "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# enqueue_figures: part 5 (NimbusKit's journal, issue 31). Prints the table's rows; needs SYNC and WORK.
enqueue_figures() {
  local count=${BENCH_CLIENT_ENQUEUES:-1000} sizes="100 10000" line
  if [ -n "${SMOKE:-}${BENCH_SMOKE:-}" ]; then count=20 sizes="100 1000"; fi
  say "enqueue: $count single enqueues at $sizes pending (offline)"
  # shellcheck disable=SC2086 # sizes are separate arguments
  NIMBUS_URL=http://127.0.0.1:9 NIMBUS_TOKEN=offline timeout 900 "$SYNC" bench-enqueue "$WORK/enqueue.json" "$count" $sizes \
    >"$WORK/enqueue.out" || die "nimbus-sync bench-enqueue failed: $(cat "$WORK/enqueue.out")"
  while read -r line; do
    say "$line"
    echo "| one enqueue at $(field pending "$line") pending (µs wall / µs CPU / bytes written / bytes to disk) | $(field us "$line") / $(field cpu_us "$line") / $(field bytes "$line") / $(field disk_bytes "$line") | $(field floor_us "$line") / $(field floor_cpu_us "$line") / $(field floor_bytes "$line") / $(field floor_disk_bytes "$line") (append + fdatasync of as many bytes) | $(ratio "$(field us "$line")" "$(field floor_us "$line")") | bytes independent of pending |"
  done < <(grep '^result enqueue ' "$WORK/enqueue.out")
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

if [ "$MODE" = enqueue ]; then
  if [ -n "${BENCH_SYNC_BIN:-}" ]; then
    SYNC=$BENCH_SYNC_BIN
  else
    if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
      say "building nimbus-sync (release)"
      swift build -c release --product nimbus-sync >&2 || die "release build failed"
    fi
    SYNC="$(swift build -c release --show-bin-path)/nimbus-sync"
  fi
  [ -x "$SYNC" ] || die "no nimbus-sync at $SYNC"
  WORK=$(mktemp -d /tmp/nimbus-bench.XXXXXX)
  rows=$(enqueue_figures)
  cat <<REPORT

NimbusKit enqueue (bench/client.sh enqueue): $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores$([ -z "${SMOKE:-}${BENCH_SMOKE:-}" ] || echo ", smoke sizes")
| measure | NimbusKit | floor | ratio | target |
|---|---|---|---|---|
$rows
REPORT
  exit 0
fi

[ -n "${BENCH_SKIP_INSTALL:-}" ] || bash deploy/install-deps.sh
if [ -z "${BENCH_SKIP_BUILD:-}" ] && [ -z "${BENCH_NIMBUS_BIN:-}" ]; then
  say "building nimbus and nimbus-sync (release)"
  swift build -c release --product nimbus >&2 || die "release build failed"
  swift build -c release --product nimbus-sync >&2 || die "release build failed"
fi
BENCH_SKIP_BUILD=1 release_binary
# nimbus-sync: BENCH_SYNC_BIN, else the one beside BENCH_NIMBUS_BIN (the same build), else the release build.
SYNC=${BENCH_SYNC_BIN:-}
[ -n "$SYNC" ] || if [ -n "${BENCH_NIMBUS_BIN:-}" ]; then SYNC=$(dirname "$BENCH_NIMBUS_BIN")/nimbus-sync; else SYNC="$(swift build -c release --show-bin-path)/nimbus-sync"; fi
[ -x "$SYNC" ] || die "no nimbus-sync at $SYNC"
embedded_workdir

say "starting nimbus (embedded PostgreSQL in $DATA)"
start_embedded_server --max-asset-bytes $((64 << 20))
data_admin user add bench >/dev/null
token() { data_admin token issue bench --device "$1" | awk '/^token:/ {print $2}'; }
export NIMBUS_URL=http://127.0.0.1:$PORT
export NIMBUS_TOKEN; NIMBUS_TOKEN=$(token phone)
export NIMBUS_WRITER_TOKEN; NIMBUS_WRITER_TOKEN=$(token mac)
# Step 7 runs as another user, so the plain user's engine fetches exactly what it did before.
data_admin user add sealer >/dev/null
SEALER_TOKEN=$(data_admin token issue sealer --device mac | awk '/^token:/ {print $2}')
sealer() { NIMBUS_TOKEN=$SEALER_TOKEN run_sync "$@"; }

# run_sync ARGS...: one nimbus-sync run (bounded); prints its result line.
run_sync() {
  timeout 900 "$SYNC" "$@" | grep '^result ' || die "nimbus-sync $* failed"
}
secs() { awk -v r="$1" -v n="$RECORDS" 'BEGIN { printf "%.1f", (r > 0 ? n / r : 0) }'; }
# least A B: the smaller (0 = none yet); most A B: the larger. Best times, CPU, rates, peaks.
least() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == 0 || b < a ? b : a) }'; }
most() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a ? b : a) }'; }

# e2e-asset mode: the server is up; step 7's asset part alone (e2e_assets, defined below).
if [ "$MODE" = e2e-asset ]; then
  export NIMBUS_KEY_FILE="$WORK/account.key"
  E2E_ONLY=1
else
say "loading $RECORDS records into zone big"
load=$(run_sync bench-raw-modify "$WORK/none.json" "$RECORDS" big)
say "$load"
# Step 7's records: every nimbus-sync of this run holds the same account key.
export NIMBUS_KEY_FILE="$WORK/account.key"
if [ -z "$CORE" ]; then
  say "loading $RECORDS records with an encrypted title into zone sealed"
  say "$(sealer bench-e2e-modify "$WORK/none.json" "$RECORDS" sealed)"
fi

# curl_fetch: the byte-counting reader (bench/changesread.c, libcurl, pages of 400, no JSON
# parsing): the server's and the loopback's share of a first sync; prints its result line.
compile_c "$WORK/changesread" bench/changesread.c -lcurl
curl_fetch() {
  timeout 900 "$WORK/changesread" "$NIMBUS_URL/database/1/$NIMBUS_CONTAINER/development/private/records/changes" \
    "$NIMBUS_TOKEN" big 400 600 || die "the byte-counting reader failed"
}

raw_best=0 engine_best=0 engine_rss=0 raw_rss=0 curl_best=0 sealed_best=0 sealed_rss=0 engine_cpu=0 sealed_cpu=0
rounds=${BENCH_CLIENT_ROUNDS:-2}
for ((round = 1; round <= rounds; round++)); do
  curl_line=$(curl_fetch); say "round $round: $curl_line"
  [ "$(field records "$curl_line")" = "$RECORDS" ] || die "the byte-counting reader saw $(field records "$curl_line") of $RECORDS records"
  curl_best=$(most "$curl_best" "$(field per_second "$curl_line")")
  raw=$(run_sync bench-raw-fetch "$WORK/none.json" big); say "round $round: $raw"
  rm -f "$WORK/fetch.json"
  engine=$(run_sync bench-fetch "$WORK/fetch.json" big); say "round $round: $engine"
  [ "$(field records "$engine")" = "$RECORDS" ] || die "the engine applied $(field records "$engine") of $RECORDS records"
  raw_best=$(most "$raw_best" "$(field per_second "$raw")")
  engine_best=$(most "$engine_best" "$(field per_second "$engine")")
  engine_rss=$(most "$engine_rss" "$(field peak_rss_mb "$engine")")
  engine_cpu=$(least "$engine_cpu" "$(field cpu_s "$engine")")
  raw_rss=$(field peak_rss_mb "$raw")
  [ -z "$CORE" ] || continue
  rm -f "$WORK/sealed.json"
  sealed=$(sealer bench-fetch "$WORK/sealed.json" sealed); say "round $round (encrypted title): $sealed"
  [ "$(field records "$sealed")" = "$RECORDS" ] || die "the engine opened $(field records "$sealed") of $RECORDS encrypted records"
  sealed_best=$(most "$sealed_best" "$(field per_second "$sealed")")
  sealed_rss=$(most "$sealed_rss" "$(field peak_rss_mb "$sealed")")
  sealed_cpu=$(least "$sealed_cpu" "$(field cpu_s "$sealed")")
done

if [ "$MODE" = sync ]; then
  opening=$(run_sync bench-e2e-open "$WORK/none.json" "$RECORDS" 5); say "$opening"
  cat <<REPORT

NimbusKit initial sync (bench/client.sh sync): $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, embedded PostgreSQL
| measure | NimbusKit | reference | ratio | target |
|---|---|---|---|---|
| initial sync of $RECORDS records (records/s, best of $rounds) | $engine_best | $raw_best (records/changes reader) | $(ratio "$engine_best" "$raw_best") | ≥ 0.5 |
| the same beside the byte-counting reader (libcurl, no JSON) | $engine_best ($(secs "$engine_best") s) | $curl_best ($(secs "$curl_best") s) | $(ratio "$engine_best" "$curl_best") | ≥ 0.5, < 4 s |
| initial sync of $RECORDS records with \`title\` encrypted (records/s, best of $rounds) | $sealed_best (peak $sealed_rss MB) | $engine_best (the same engine, plain) | $(ratio "$sealed_best" "$engine_best") | ≥ 0.8 |
| the same two syncs' client CPU (s, user + system, least of $rounds; steadier than wall-clock on a loaded machine) | $sealed_cpu | $engine_cpu | $(ratio "$engine_cpu" "$sealed_cpu") | |
| decoding and opening a page, CPU ns per record (median of 5, no server) | $(field sealed_ns_per_record "$opening") (\`title\` encrypted) | $(field plain_ns_per_record "$opening") (plain) | +$(field field_ns "$opening") ns per field | |
REPORT
  exit 0
fi

say "outbox: $OUTBOX records"
raw_modify=$(run_sync bench-raw-modify "$WORK/none.json" "$OUTBOX" rawout); say "$raw_modify"
rm -f "$WORK/outbox.json"
outbox=$(run_sync bench-outbox "$WORK/outbox.json" "$OUTBOX" engineout); say "$outbox"

say "live: $LIVE writes"
rm -f "$WORK/live.json"
live=$(run_sync bench-live "$WORK/live.json" "$LIVE"); say "$live"

# asset_downloads: BENCH_CLIENT_ASSETS (10) assets of BENCH_CLIENT_ASSET_BYTES (1 MiB) uploaded once,
# then downloaded into a fresh cache by nimbus-sync from a debug and a release build (one after
# another, verified; and the fetch prefetch, four at a time) beside plain URLSession GETs of the same
# URLs (issue 31: the checksum runs at platform speed in both builds). Sets ASSET_ROWS.
asset_downloads() {
  local count=${BENCH_CLIENT_ASSETS:-10} bytes=${BENCH_CLIENT_ASSET_BYTES:-1048576} debug release debug_sync
  if [ -n "${BENCH_DEBUG_SYNC_BIN:-}" ]; then
    debug_sync=$BENCH_DEBUG_SYNC_BIN
  else
    [ -n "${BENCH_SKIP_BUILD:-}" ] || swift build --product nimbus-sync >&2 || die "debug build failed"
    debug_sync="$(swift build --show-bin-path)/nimbus-sync"
  fi
  [ -x "$debug_sync" ] || die "no debug nimbus-sync at $debug_sync (swift build --product nimbus-sync, or BENCH_DEBUG_SYNC_BIN)"
  run_sync bench-assets-upload "$WORK/none.json" "$count" "$bytes" assets >/dev/null
  debug=$(timeout 900 "$debug_sync" bench-assets-download "$WORK/none.json" assets | grep '^result ') || die "debug download failed"
  release=$(run_sync bench-assets-download "$WORK/none.json" assets)
  say "debug: $debug"; say "release: $release"
  ASSET_ROWS="| asset download, $count × $bytes bytes, one at a time, verified (s) | debug $(field nimbuskit_s "$debug") / release $(field nimbuskit_s "$release") | $(field urlsession_s "$release") (plain URLSession, release) | $(ratio "$(field urlsession_s "$release")" "$(field nimbuskit_s "$debug")") (debug) | debug ≈ release |
| the same as a fetch's prefetch, 4 at a time (s) | debug $(field prefetch_s "$debug") / release $(field prefetch_s "$release") | | | |"
}
ASSET_ROWS="" E2E_ROWS="" enqueue_rows="" sealed_row=""
if [ -z "$CORE" ]; then
  say "assets: downloads in debug and release"
  asset_downloads
fi
fi  # the e2e-asset mode's else

# e2e_assets: step 7's asset, plain and sealed, each in its own process, twice (best times,
# highest peak memory). Sets E2E_ROWS.
e2e_assets() {
  local bytes=${BENCH_CLIENT_E2E_ASSET_BYTES:-52428800} rounds=${BENCH_CLIENT_E2E_ROUNDS:-2} round mode line
  local plain_up=0 plain_down=0 plain_rss=0 sealed_up=0 sealed_down=0 sealed_rss=0 plain_cpu=0 sealed_cpu=0 plain_up_cpu=0 sealed_up_cpu=0
  head -c "$bytes" /dev/urandom >"$WORK/e2e-asset.bin"
  for round in $(seq 1 "$rounds"); do
    for mode in plain sealed; do
      line=$(sealer bench-e2e-asset "$WORK/none.json" "$mode" "$WORK/e2e-asset.bin" "e2e$round"); say "round $round: $line"
      if [ "$mode" = plain ]; then
        plain_up=$(least "$plain_up" "$(field upload_s "$line")"); plain_up_cpu=$(least "$plain_up_cpu" "$(field upload_cpu_s "$line")"); plain_down=$(least "$plain_down" "$(field download_s "$line")")
        plain_cpu=$(least "$plain_cpu" "$(field download_cpu_s "$line")")
        plain_rss=$(most "$plain_rss" "$(field peak_rss_mb "$line")")
      else
        sealed_up=$(least "$sealed_up" "$(field upload_s "$line")"); sealed_up_cpu=$(least "$sealed_up_cpu" "$(field upload_cpu_s "$line")"); sealed_down=$(least "$sealed_down" "$(field download_s "$line")")
        sealed_cpu=$(least "$sealed_cpu" "$(field download_cpu_s "$line")")
        sealed_rss=$(most "$sealed_rss" "$(field peak_rss_mb "$line")")
      fi
    done
  done
  E2E_ROWS="| encrypted asset upload, $bytes bytes (s, best of $rounds) | $sealed_up | $plain_up (plain asset) | $(ratio "$plain_up" "$sealed_up") (speed) | ≥ 0.8 |
| the same upload's client CPU (s, user + system, best of $rounds) | $sealed_up_cpu | $plain_up_cpu (plain asset) | $(ratio "$plain_up_cpu" "$sealed_up_cpu") | |
| encrypted asset download into an empty cache, opened (s, best of $rounds) | $sealed_down | $plain_down (plain asset) | $(ratio "$plain_down" "$sealed_down") (speed) | ≥ 0.8 |
| the same download's client CPU (s, user + system, best of $rounds; steadier than wall-clock on a loaded machine) | $sealed_cpu | $plain_cpu (plain asset) | $(ratio "$plain_cpu" "$sealed_cpu") | |
| peak client memory, upload + download (MB) | $sealed_rss | $plain_rss | +$(awk -v a="$sealed_rss" -v b="$plain_rss" 'BEGIN { printf "%.1f", a - b }') MB | ≤ plain + 16 MiB |"
}
if [ -n "${E2E_ONLY:-}" ]; then
  say "encrypted vs plain asset"
  e2e_assets
  cat <<REPORT

NimbusKit encrypted vs plain asset (bench/client.sh e2e-asset): $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, embedded PostgreSQL
| measure | NimbusKit | raw reference | ratio | target |
|---|---|---|---|---|
$E2E_ROWS
REPORT
  exit 0
fi
if [ -z "$CORE" ]; then
  say "encrypted vs plain asset"
  e2e_assets
  enqueue_rows=$(enqueue_figures)
  sealed_row="| initial sync of $RECORDS records with \`title\` encrypted (records/s, best of $rounds) | $sealed_best (peak $sealed_rss MB) | $engine_best (the same engine, plain) | $(ratio "$sealed_best" "$engine_best") | ≥ 0.8 |"
fi

printf '\nNimbusKit (bench/client.sh): %s, %s cores, embedded PostgreSQL%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "${CORE:+ (BENCH_CLIENT_CORE: steps 2-4)}"
# The table without the rows of the steps not run (BENCH_CLIENT_CORE).
grep -v '^$' <<REPORT
| measure | NimbusKit | raw reference | ratio | target |
|---|---|---|---|---|
| initial sync of $RECORDS records (records/s, best of $rounds) | $engine_best | $raw_best (records/changes reader) | $(ratio "$engine_best" "$raw_best") | ≥ 0.5 |
| the same beside the byte-counting reader (libcurl, no JSON) | $engine_best ($(secs "$engine_best") s) | $curl_best ($(secs "$curl_best") s) | $(ratio "$engine_best" "$curl_best") | ≥ 0.5, < 4 s |
| peak client memory during it (MB) | $engine_rss | $raw_rss | | ≤ 100 |
$sealed_row
$E2E_ROWS
| outbox, enqueue → acknowledged, $OUTBOX records (records/s) | $(field per_second "$outbox") | $(field per_second "$raw_modify") (records/modify, 400 per request) | $(ratio "$(field per_second "$outbox")" "$(field per_second "$raw_modify")") | ≥ 0.5 |
| live delivery of $LIVE writes (ms) | p50 $(field p50_ms "$live") / p99 $(field p99_ms "$live") | | | p99 < 1000 |
$ASSET_ROWS
$enqueue_rows
REPORT
