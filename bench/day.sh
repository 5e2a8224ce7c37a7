#!/usr/bin/env bash
# A day in the life (issue #18, item 4): the apps' traffic at realistic proportions against one
# Nimbus instance and its PostgreSQL on this machine — per simulated user a Mac and an iPhone
# (AppLocker's shape, deploy/schemas/applocker.json: the Mac publishes BlockedAppEvents, the phone shows a
# dashboard of the latest events, intruder photos, and sends remote commands to the Mac) — with
# every device holding a long-poll and the pruning job running; p50/p99 per operation, wake
# latency, memory and CPU per user. Target (issue #18): p99 of every device request <= 50 ms and
# wake p99 <= 100 ms at 10,000 users on 2 cores, or the number of users at which that stops holding.
#
#   bash bench/day.sh                                    # 10,000 users, 60 s
#   BENCH_STEPS="1000 3000 10000" bash bench/day.sh      # where the targets stop holding
#
# 1. Installs what it needs (deploy/install-deps.sh), builds nimbus in release mode (or takes
#    BENCH_NIMBUS_BIN), compiles bench/dayload.c (C, one thread, epoll).
# 2. One scratch PostgreSQL cluster (Unix socket, temp dir; fsync on, synchronous_commit on), nimbus
#    migrate, the AppLocker schema (deploy/schemas/applocker.json: BlockedAppEvent and
#    FailedAuthEvent expire after 30 days, RemoteCommand after 7). The users (day0, day1, ...) and
#    their two device tokens each (`mac`, `iphone`) are written with SQL (the admin CLI is a process
#    and a database connection per call, three calls per user: far too slow for 10,000 users); a
#    token is any secret whose SHA-256 is stored, as `nimbus token issue` stores it. Through the API: per user zones `events` (the Mac writes, the
#    phone waits) and `commands` (the phone writes, the Mac waits); for BENCH_PHOTO_USERS users a
#    FailedAuthEvent with a ~200 KB photo (random bytes, as the app's encrypted .aplkimg) through
#    assets/upload, the upload URL and records/modify; its downloadURL is what phones fetch.
# 3. For each user count N of BENCH_STEPS (default BENCH_USERS), with a fresh `nimbus serve
#    --database-url` (--prune-interval BENCH_PRUNE_INTERVAL, --max-waiters and --max-connections
#    above 2N, --requests-per-second-per-token 0):
#    a. BENCH_EXPIRED_PER_USER change sequence numbers are reserved in every events zone of the
#       first N users (the zones' change_seq raised, nothing written yet);
#    b. dayload syncs every device (records/changes from no token to its current syncToken), then
#       parks 2N long-polls (records/changes wait 55: the phone on events, the Mac on commands);
#       nimbus RSS before and after parking. One connection per long-poll on both sides: when the
#       file-descriptor limit (hard; raising it needs CAP_SYS_RESOURCE, which containers lack) is
#       below 2N + 600, only the Macs of the first (limit - N - 600) users park — the summary says so
#       (a limit of 20,000 parks 19,400 of the 20,000 at 10,000 users);
#    c. the expired events (BlockedAppEvent, timestamp 31 days ago) are written with SQL into the
#       reserved sequence numbers: records every device synced long ago, nothing wakes, and the next
#       run of the pruning job (every BENCH_PRUNE_INTERVAL, so at least once in the window) deletes
#       them through the normal delete path — tombstones and wakes of the phones, as in production;
#    d. BENCH_SECONDS of the open-loop Poisson mix below (dayload, see its header), CPU of nimbus,
#       PostgreSQL, dayload and the rest of the machine over the window (/proc), nimbus RSS at the end;
#       the prune runs that finished (prune_runs), the expired events left, and the statements
#       of the window (pg_stat_statements, reset at its start).
#    The summary reports per operation p50/p99/max and errors, wake p50/p99 (write sent → the other
#    device's long-poll answered with the record), KB per user, CPU per active user-second and per
#    request, whether the pruning job ran and what it removed, the 5 worst seconds of the window,
#    the slowest single statements (with pg_stat_statements from postgresql-contrib), and PASS/MISS per step; the run
#    fails (exit 1) on any non-2xx answer, item error, socket error, missed wake or lost long-poll.
#
# The mix (BENCH_MIX, weights of: create burst changes query photo command; default 60 2 15 15 3 5):
#   create  60  Mac: one BlockedAppEvent per records/modify — every blocked app launch is one save
#               (the seed's publishBlockedApp: db.save of one record), so writes dominate;
#   burst    2  Mac: 50 events in one records/modify — a Mac that was offline or asleep flushing its
#               queue; rare, but 2 of 100 operations carry 100 of the ~165 records written;
#   changes 15  phone: records/changes from its token without wait — the app coming to the foreground
#               (the long-poll answers carry the woken changes themselves);
#   query   15  phone: records/query of BlockedAppEvent sorted by timestamp desc, resultsLimit 100 —
#               the dashboard (the seed's fetchBlockedEvents(limit: 100)), as often as foregrounding;
#   photo    3  phone: GET of a ~200 KB intruder photo — only after a failed unlock, a few a day;
#   command  5  phone: one RemoteCommand (lock all) — remote control is occasional, and it is what
#               wakes the Mac's long-poll.
#   On top of the mix, every answered long-poll parks again (operation `park`): each write wakes the
#   other device, each prune deletion wakes the phone, and every idle long-poll ends after 55 s —
#   2N/55 re-parks a second (364/s at 10,000 users) even in a quiet hour.
# Rate: BENCH_RATE operations/s in all, default N * BENCH_ACTIVE / BENCH_THINK (a fifth of the
# users active, one operation every 5 s each: 400/s at 10,000 users — a busy hour rather than the
# day's average). Operations go to random active users.
# Connections: each device's long-poll has a connection of its own (2N); the operations share a
# pool of keep-alive connections (up to 512; latency is counted from the scheduled time, so a
# stalled server is not hidden by the pool).
#
# Knobs (environment): BENCH_USERS=10000 BENCH_SECONDS=60 BENCH_STEPS="$BENCH_USERS" BENCH_RATE=
#   BENCH_ACTIVE=0.2 BENCH_THINK=5 BENCH_MIX="60 2 15 15 3 5" BENCH_EXPIRED_PER_USER=5
#   BENCH_PHOTO_USERS=100 BENCH_PHOTO_KB=200 BENCH_PRUNE_INTERVAL=<half of BENCH_SECONDS, at least 10>s
#   BENCH_POOL_SIZE= BENCH_EVENT_LOOPS= BENCH_PG_OPTS="-c name=value ..." (extra postgres settings)
#   BENCH_NIMBUS_BIN=path (that binary; no build) BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1
#   BENCH_SYNC_PARK=1 (the first long-poll of every device waits 55 s, as after a server restart, so
#   that all of them time out and park again within the seconds the parking took, 55 s later; by
#   default the first waits are spread over 1-55 s, the steady state of a fleet)
#   BENCH_P99_TARGET=50 BENCH_WAKE_TARGET=100 (ms; the issue's targets) BENCH_KEEP=1 (keep the temp dir)
# Loopback only; every wait is bounded; everything it starts is stopped by PID; the temp dir is removed.
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_USERS=20 BENCH_SECONDS=5 BENCH_RATE=20 BENCH_PHOTO_USERS=2 BENCH_PHOTO_KB=10 BENCH_EXPIRED_PER_USER=2 BENCH_PRUNE_INTERVAL=3s), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 120 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=day
source bench/lib.sh  # say, die, stop_pid, pg_pid, psql, smoke_mode, ...
smoke_mode 120 BENCH_USERS=20 BENCH_SECONDS=5 BENCH_RATE=20 BENCH_PHOTO_USERS=2 BENCH_PHOTO_KB=10 BENCH_EXPIRED_PER_USER=2 BENCH_PRUNE_INTERVAL=3s -- "$@"
ROOT=$PWD

USERS=${BENCH_USERS:-10000}
SECS=${BENCH_SECONDS:-60}
STEPS=${BENCH_STEPS:-$USERS}
RATE=${BENCH_RATE:-}
ACTIVE=${BENCH_ACTIVE:-0.2}
THINK=${BENCH_THINK:-5}
MIX=${BENCH_MIX:-60 2 15 15 3 5}
EXPIRED=${BENCH_EXPIRED_PER_USER:-5}
PHOTO_USERS=${BENCH_PHOTO_USERS:-100}
PHOTO_KB=${BENCH_PHOTO_KB:-200}
PRUNE_INTERVAL=${BENCH_PRUNE_INTERVAL:-$(( SECS / 2 > 10 ? SECS / 2 : 10 ))s}
POOL_SIZE=${BENCH_POOL_SIZE:-}
EVENT_LOOPS=${BENCH_EVENT_LOOPS:-}
CONTAINER=iCloud.com.mirxa.AppLocker
P99_TARGET=${BENCH_P99_TARGET:-50}
WAKE_TARGET=${BENCH_WAKE_TARGET:-100}
OPS="create burst changes query photo command park"
NOFILE_RESERVE=600  # descriptors kept free: dayload opens up to 512 operation connections (nimbus accepts them too), plus pools, listeners, files

T0=$(date +%s)

MAXU=0
for n in $STEPS; do
  [[ "$n" =~ ^[0-9]+$ ]] && ((n > 0)) || die "BENCH_STEPS: '$n' is not a positive user count"
  ((n > MAXU)) && MAXU=$n
done
((PHOTO_USERS > MAXU)) && PHOTO_USERS=$MAXU

# ---------------------------------------------------------------- cleanup (by PID only)
WORK="" NIMBUS_PID="" LOAD_PID="" LOAD_FD="" PG_BIN="" PG_DATA=""
stop_own_processes() {
  [ -n "$LOAD_FD" ] && eval "exec $LOAD_FD>&-"
  stop_pid "$LOAD_PID" TERM 5
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
rev+=", binary $NIMBUS_BIN of $(date -r "$NIMBUS_BIN" '+%F %T')"

WORK=$(mktemp -d /tmp/nimbus-day-bench.XXXXXX)
chmod 755 "$WORK"
compile_c "$WORK/dayload" bench/dayload.c -lm
DAYLOAD=$WORK/dayload

# Descriptors: one per parked long-poll on both sides (the children inherit this). Raising the hard
# limit needs CAP_SYS_RESOURCE; without it (a container) the Macs' long-polls are capped so that
# nimbus and dayload stay NOFILE_RESERVE below the limit: see mac_waiters in run_step.
want=$((2 * MAXU + NOFILE_RESERVE))
if [ "$(ulimit -Hn)" != unlimited ] && (( $(ulimit -Hn) < want )); then ulimit -Hn "$want" 2>/dev/null || true; fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
[ "$NOFILE" = unlimited ] && NOFILE=1048576
((NOFILE >= MAXU + NOFILE_RESERVE)) || die "only $NOFILE file descriptors allowed; $MAXU users need at least $((MAXU + NOFILE_RESERVE)) (raise ulimit -Hn)"
((NOFILE >= want)) || say "file descriptors: the limit is $NOFILE (hard; raising it was refused), below the $want that $MAXU users' 2 long-polls need: steps above $(( (NOFILE - NOFILE_RESERVE) / 2 )) users park fewer Mac long-polls"

# ---------------------------------------------------------------- 2. PostgreSQL, users, zones, photos
pg_settings=(max_connections=200 fsync=on synchronous_commit=on)
HAVE_PGSS=""
if [ -f "$PG_BIN/../lib/pg_stat_statements.so" ]; then
  pg_settings+=(shared_preload_libraries=pg_stat_statements pg_stat_statements.track=top)
  HAVE_PGSS=1
fi
start_bench_postgres "${pg_settings[@]}" --opts "${BENCH_PG_OPTS:-}"
psql -d postgres -c 'CREATE DATABASE nimbus' >/dev/null
[ -n "$HAVE_PGSS" ] && psql -d nimbus -c 'CREATE EXTENSION pg_stat_statements' >/dev/null
DB_URL="postgresql:///nimbus?host=$SOCK&user=nimbus"
PG_SETTINGS=$(psql -d postgres -At -F= -c "SELECT name, setting FROM pg_settings WHERE name IN
  ('fsync','synchronous_commit','shared_buffers','max_connections','max_parallel_workers_per_gather','jit') ORDER BY name" | paste -sd' ')
admin migrate >"$WORK/migrate.out" 2>&1 || { cat "$WORK/migrate.out" >&2; die "nimbus migrate failed"; }
admin schema import deploy/schemas/applocker.json >"$WORK/schema.out" 2>&1 || { cat "$WORK/schema.out" >&2; die "schema import failed"; }

say "creating $MAXU users with a Mac and an iPhone token each (SQL)"
SALT=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
psql -d nimbus -c "
  INSERT INTO users (name, record_name) SELECT 'day' || g, '_' || md5('$SALT-user-' || g) FROM generate_series(0, $MAXU - 1) g;
  INSERT INTO device_tokens (user_id, token_id, token_sha256, device_name)
  SELECT u.id, 'tok_' || left(md5('$SALT-id-' || d || g), 12), sha256(convert_to(d || '-' || md5('$SALT-secret-' || d || g), 'UTF8')), d
  FROM generate_series(0, $MAXU - 1) g JOIN users u ON u.name = 'day' || g CROSS JOIN (VALUES ('mac'), ('iphone')) AS devices(d)" >/dev/null \
  || die "creating the users failed"
# users.txt, line u: MAC_TOKEN PHONE_TOKEN of user day<u>
psql -d nimbus -At -F' ' -c "SELECT 'mac-' || md5('$SALT-secret-mac' || g), 'iphone-' || md5('$SALT-secret-iphone' || g)
  FROM generate_series(0, $MAXU - 1) g ORDER BY g" >"$WORK/users.txt"
[ "$(wc -l <"$WORK/users.txt")" = "$MAXU" ] || die "users.txt has $(wc -l <"$WORK/users.txt") lines, not $MAXU"

CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
rss_kb() { awk '/^VmRSS:/ {print $2; exit}' "/proc/$1/status" 2>/dev/null || echo 0; }
pg_ticks() {  # the postmaster with its reaped children plus the live children
  local pm t c
  pm=$(pg_pid); [ -n "$pm" ] || { echo 0; return; }
  t=$(proc_ticks "$pm" all)
  for c in $(cat /proc/"$pm"/task/*/children 2>/dev/null); do t=$((t + $(proc_ticks "$c"))); done
  echo "$t"
}
metric() { curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" '$1 == n && !found {print $2; found = 1}'; }  # to the end: see bench/longpoll.sh
# start_nimbus LOG MAXWAITERS: nimbus serve on a free port; sets NIMBUS_PID and PORT.
start_nimbus() {
  local log=$1 waiters=$2 i
  NIMBUS_LOG=$log
  "$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url "$DB_URL" --data-dir "$WORK/nimbus-data" \
    --requests-per-second-per-token 0 --max-waiters "$waiters" --max-connections $((waiters + 2048)) \
    --prune-interval "$PRUNE_INTERVAL" ${POOL_SIZE:+--pool-size "$POOL_SIZE"} ${EVENT_LOOPS:+--event-loops "$EVENT_LOOPS"} \
    </dev/null >"$log" 2>&1 &
  NIMBUS_PID=$!
  PORT=""
  for ((i = 0; i < 1200; i++)); do
    PORT=$(grep -a -o 'listening on http://[0-9.]*:[0-9]*' "$log" 2>/dev/null | head -1 | sed 's/.*://' || true)
    [ -n "$PORT" ] && break
    kill -0 "$NIMBUS_PID" 2>/dev/null || die "nimbus exited; log tail:$(printf '\n'; tail -20 "$log")"
    sleep 0.1
  done
  [ -n "$PORT" ] || die "nimbus did not listen within 120 s"
}
NIMBUS_LOG=""
STOPPED=""
stop_nimbus() {  # sets STOPPED to "exit RC in MS ms" (SIGTERM; SIGKILL after 60 s)
  local t rc=0 i
  t=$(date +%s%N)
  kill -TERM "$NIMBUS_PID" 2>/dev/null || true
  for ((i = 0; i < 600; i++)); do kill -0 "$NIMBUS_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$NIMBUS_PID" 2>/dev/null && { say "nimbus did not stop within 60 s; killing it"; kill -KILL "$NIMBUS_PID"; }
  wait "$NIMBUS_PID" || rc=$?
  NIMBUS_PID=""
  STOPPED="exit $rc in $(( ($(date +%s%N) - t) / 1000000 )) ms"
}

mkdir -p "$WORK/nimbus-data"
start_nimbus "$WORK/nimbus-setup.log" $((2 * MAXU + 1000))
say "nimbus (setup) pid $NIMBUS_PID, port $PORT; zones events and commands for $MAXU users"
"$DAYLOAD" zones 127.0.0.1 "$PORT" "$CONTAINER" "$WORK/users.txt" "$MAXU" >"$WORK/zones.out" 2>"$WORK/zones.err" \
  || die "zone setup failed: $(cat "$WORK/zones.out") $(head -5 "$WORK/zones.err")"
say "$(cat "$WORK/zones.out")"

say "photos: a FailedAuthEvent with a ${PHOTO_KB} KB photo for $PHOTO_USERS users"
head -c $((PHOTO_KB * 1024)) /dev/urandom >"$WORK/photo.aplkimg"
API=http://127.0.0.1:$PORT/database/1/$CONTAINER/development/private
json_field() { grep -o "\"$1\": *\"[^\"]*\"" | head -1 | sed 's/.*: *"//; s/"$//'; }
json_number() { grep -o "\"$1\": *[0-9]*" | head -1 | sed 's/.*: *//'; }
: >"$WORK/photos.txt"
u=0
while IFS=' ' read -r mac_token phone_token && ((u < PHOTO_USERS)); do
  answer=$(curl -sS --max-time 30 -H "Authorization: Bearer $mac_token" -H 'Content-Type: application/json' \
    --data '{"zoneID":{"zoneName":"events"},"tokens":[{"recordType":"FailedAuthEvent","fieldName":"photoAsset"}]}' "$API/assets/upload") \
    || die "assets/upload failed (user $u)"
  url=$(json_field url <<<"$answer")
  [ -n "$url" ] || die "assets/upload (user $u): no url in $(head -c 300 <<<"$answer")"
  answer=$(curl -sS --max-time 60 -X POST -H "Authorization: Bearer $mac_token" -T "$WORK/photo.aplkimg" "$url") || die "photo upload failed (user $u)"
  sum=$(json_field fileChecksum <<<"$answer") size=$(json_number size <<<"$answer") receipt=$(json_field receipt <<<"$answer")
  [ -n "$sum" ] && [ -n "$receipt" ] || die "photo upload (user $u): $(head -c 300 <<<"$answer")"
  answer=$(curl -sS --max-time 30 -H "Authorization: Bearer $mac_token" -H 'Content-Type: application/json' --data \
    "{\"zoneID\":{\"zoneName\":\"events\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"photo-$u\",\"recordType\":\"FailedAuthEvent\",\"fields\":{\"appName\":{\"value\":\"Photos\"},\"bundleID\":{\"value\":\"com.apple.Photos\"},\"deviceName\":{\"value\":\"mac-$u\"},\"timestamp\":{\"value\":$(date +%s%3N),\"type\":\"TIMESTAMP\"},\"photoAsset\":{\"value\":{\"fileChecksum\":\"$sum\",\"size\":$size,\"receipt\":\"$receipt\"},\"type\":\"ASSETID\"}}}}]}" \
    "$API/records/modify") || die "records/modify of the photo event failed (user $u)"
  durl=$(json_field downloadURL <<<"$answer")
  [ -n "$durl" ] || die "photo event (user $u): no downloadURL in $(head -c 400 <<<"$answer")"
  echo "$u /${durl#http*://*/}" >>"$WORK/photos.txt"
  u=$((u + 1))
done <"$WORK/users.txt"
stop_nimbus
say "setup nimbus stopped: $STOPPED"

# ---------------------------------------------------------------- 3. the steps
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i + 1); exit}}' <<<"$1"; }
wait_line() {  # wait_line FILE PATTERN SECONDS: 0 when a line of FILE matches; 1 if dayload died or time ran out
  local file=$1 pattern=$2 secs=$3 i
  for ((i = 0; i < secs * 20; i++)); do
    grep -q -- "$pattern" "$file" 2>/dev/null && return 0
    kill -0 "$LOAD_PID" 2>/dev/null || { grep -q -- "$pattern" "$file" 2>/dev/null && return 0; return 1; }
    sleep 0.05
  done
  return 1
}
user_filter() { echo "u.name ~ '^day[0-9]+\$' AND substr(u.name, 4)::int < $1"; }
STEP_RESULTS=()
PROBLEMS='^(warning|error|critical) |"level":"(warning|error|critical)"|Fatal error|panic|Segmentation fault|Illegal instruction'
run_step() {
  local n=$1 rate out log ctl i rss_start rss_before rss_parked rss_end gauge insert_s t_go c0 c1 cpu line
  rate=${RATE:-$(awk -v n="$n" -v a="$ACTIVE" -v t="$THINK" 'BEGIN {printf "%.1f", n * a / t}')}
  out=$WORK/step-$n.out log=$WORK/nimbus-$n.log ctl=$WORK/step-$n.ctl
  local macw=$((NOFILE - n - NOFILE_RESERVE))
  ((macw > n)) && macw=$n
  ((macw < n)) && say "only $macw of $n Macs park a long-poll (file-descriptor limit $NOFILE per process)"
  say "=== step: $n users, $rate operations/s for ${SECS}s ==="
  start_nimbus "$log" $((2 * n + 1000))
  sleep 1
  rss_start=$(rss_kb "$NIMBUS_PID")
  # a. reserve sequence numbers for the expired events in the events zones of the first n users
  psql -d nimbus -c "
    SET client_min_messages = warning;
    DROP TABLE IF EXISTS bench_day_reserve;
    CREATE TABLE bench_day_reserve AS
    WITH z AS (
      UPDATE zones z SET change_seq = z.change_seq + $EXPIRED
      FROM databases d JOIN users u ON u.id = d.owner_user_id
      WHERE z.database_id = d.id AND d.container = '$CONTAINER' AND d.environment = 'development' AND z.zone_name = 'events'
        AND $(user_filter "$n")
      RETURNING z.id AS zone_id, z.change_seq - $EXPIRED AS base, u.record_name AS owner)
    SELECT * FROM z" >/dev/null || die "reserving sequence numbers failed"
  # b. sync and park
  rm -f "$ctl"; mkfifo "$ctl"
  ${BENCH_SYNC_PARK:+env DAYLOAD_SYNC_PARK=1} "$DAYLOAD" run 127.0.0.1 "$PORT" "$CONTAINER" "$WORK/users.txt" "$WORK/photos.txt" "$n" "$SECS" "$rate" "$ACTIVE" "$MIX" "$macw" \
    <"$ctl" >"$out" 2>"$out.err" &
  LOAD_PID=$!
  exec {LOAD_FD}>"$ctl"
  wait_line "$out" '^synced' 900 || die "dayload did not sync: $(cat "$out") $(head -5 "$out.err")"
  say "$(grep '^synced' "$out")"
  grep -q '^synced .* errors 0 ' "$out" || die "sync errors: $(head -5 "$out.err")"
  sleep 1
  rss_before=$(rss_kb "$NIMBUS_PID")
  echo park >&"$LOAD_FD"
  wait_line "$out" '^ready' 900 || die "dayload did not park: $(cat "$out") $(head -5 "$out.err")"
  say "$(grep '^parked' "$out")"
  sleep 2
  rss_parked=$(rss_kb "$NIMBUS_PID")
  gauge=$(metric nimbus_longpoll_waiters)
  local fds
  fds=$(ls /proc/"$NIMBUS_PID"/fd 2>/dev/null | wc -l)
  # c. the expired events, into the reserved sequence numbers
  t=$(date +%s.%N)
  psql -d nimbus -c "
    INSERT INTO records (zone_id, record_name, record_type, fields, change_seq, created_at, created_by_device,
                         created_by_user, modified_at, modified_by_device, modified_by_user, deleted, expires_at)
    SELECT r.zone_id, 'old-' || r.zone_id || '-' || r.base || '-' || g, 'BlockedAppEvent',
           jsonb_build_object(
             'appName', jsonb_build_object('type', 'STRING', 'value', 'Safari'),
             'bundleID', jsonb_build_object('type', 'STRING', 'value', 'com.apple.Safari'),
             'deviceName', jsonb_build_object('type', 'STRING', 'value', 'mac'),
             'timestamp', jsonb_build_object('type', 'TIMESTAMP', 'value',
                 (extract(epoch FROM now() - interval '31 days') * 1000)::int8 + g)),
           r.base + g, now() - interval '31 days', 'mac', r.owner, now() - interval '31 days', 'mac', r.owner,
           false, now() - interval '1 day'
    FROM bench_day_reserve r, generate_series(1, $EXPIRED) g" >/dev/null || die "writing the expired events failed"
  insert_s=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  checkpoint
  alive
  # d. the window
  local log_lines0 prune_runs0
  log_lines0=$(wc -l <"$log")
  prune_runs0=$(psql -d nimbus -At -c 'SELECT coalesce(max(id), 0) FROM prune_runs')
  c0="$(proc_ticks "$NIMBUS_PID") $(pg_ticks) $(proc_ticks "$LOAD_PID") $(machine_busy) $(date +%s.%N)"
  [ -n "$HAVE_PGSS" ] && psql -d nimbus -c 'SELECT pg_stat_statements_reset()' >/dev/null
  t_go=$(date +%s.%N)
  echo go >&"$LOAD_FD"
  wait_line "$out" '^window-end' $((SECS + 120)) || die "dayload did not finish its window: $(tail -3 "$out") $(head -5 "$out.err")"
  c1="$(proc_ticks "$NIMBUS_PID") $(pg_ticks) $(proc_ticks "$LOAD_PID") $(machine_busy) $(date +%s.%N)"
  rss_end=$(rss_kb "$NIMBUS_PID")
  # the statements of the window (and of the drain's few seconds after it): the slowest single executions
  if [ -n "$HAVE_PGSS" ]; then
    psql -d nimbus -At -F'|' -c "SELECT calls, round(total_exec_time::numeric / 1000, 1), round(mean_exec_time::numeric, 2),
        round(max_exec_time::numeric, 1), regexp_replace(left(query, 120), '\s+', ' ', 'g')
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'nimbus') AND calls > 0
      ORDER BY max_exec_time DESC LIMIT 5" >"$WORK/statements-$n.txt" 2>/dev/null || true
  fi
  kill -0 "$LOAD_PID" 2>/dev/null || say "dayload ended before the CPU counters were read (its CPU is missing)"
  echo report >&"$LOAD_FD"
  wait_line "$out" '^done' 60 || die "dayload did not report: $(tail -3 "$out") $(head -5 "$out.err")"
  eval "exec $LOAD_FD>&-"; LOAD_FD=""
  wait "$LOAD_PID" || say "dayload exited $?"
  LOAD_PID=""
  alive
  # the prune: runs finished since the window began (one still running is reported by the log)
  local prune_runs prune_left prune_log
  prune_runs=$(psql -d nimbus -At -F' ' -c "SELECT count(*), coalesce(sum(records), 0), coalesce(round(sum(seconds)::numeric, 1), 0)
    FROM prune_runs WHERE id > $prune_runs0")
  # When each run went, in seconds from the start of the window: it ended at finished_at (the
  # clock when its row was written; servers before 2026-11-25 wrote the transaction's start there).
  local prune_when
  prune_when=$(psql -d nimbus -At -c "SELECT string_agg(format('%s..%s s', to_char(extract(epoch FROM finished_at) - seconds - $t_go, 'FMSG9990.0'),
      to_char(extract(epoch FROM finished_at) - $t_go, 'FMSG9990.0')), ', ' ORDER BY id) FROM prune_runs WHERE id > $prune_runs0")
  prune_left=$(psql -d nimbus -At -c "SELECT count(*) FROM records r JOIN bench_day_reserve b ON b.zone_id = r.zone_id
    WHERE r.record_name LIKE 'old-' || b.zone_id || '-' || b.base || '-%' AND NOT r.deleted")
  prune_log=$(tail -n +"$((log_lines0 + 1))" "$log" | grep -a -E 'prun' | tail -3 | cut -c1-200 | paste -sd'|' || true)
  local stop problems
  problems=$(grep -a -c -E "$PROBLEMS" "$log" || true)
  stop_nimbus
  stop=$STOPPED
  cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$CLK_TCK" 'BEGIN {
    split(a, x, " "); split(b, y, " "); w = y[5] - x[5]
    n = (y[1] - x[1]) / hz; p = (y[2] - x[2]) / hz; l = (y[3] - x[3]) / hz; busy = (y[4] - x[4]) / hz
    o = busy - n - p - l; if (o < 0) o = 0
    printf "%.2f %.2f %.2f %.2f %.2f", w, n, p, l, o }')
  {
    echo "users $n rate $rate"
    echo "rss start $rss_start before $rss_before parked $rss_parked end $rss_end gauge ${gauge:-?} fds $fds macw $macw nofile $NOFILE"
    echo "cpu $cpu"
    echo "prune runs ${prune_runs% * *} removed $(cut -d' ' -f2 <<<"$prune_runs") seconds ${prune_runs##* } left $prune_left expired $((n * EXPIRED)) insert_s $insert_s"
    echo "prunelog $prune_log"
    echo "prunewhen $prune_when"
    echo "nimbus stop $stop problems $problems"
    cat "$out"
  } >"$WORK/result-$n.txt"
  [ -s "$out.err" ] && say "dayload stderr (first lines): $(head -5 "$out.err" | cut -c1-300 | tr '\n' ' ')"
  say "step $n: $(grep -E '^(op|wake)' "$out" | awk '{printf "%s %s p99 %s; ", $1, $2, $8}')"
  STEP_RESULTS+=("$n")
}

for n in $STEPS; do run_step "$n"; done

# ---------------------------------------------------------------- 4. summary
set +e +o pipefail
verdict() { if awk "BEGIN {exit !($1)}"; then echo PASS; else echo MISS; fi; }
FAILED="" HOLDS="" BREAKS=""
{
  echo
  echo "================ Nimbus day-in-the-life benchmark ================"
  echo "machine: $(nproc) cores, kernel $(uname -r); load average now $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "nimbus build: $rev"
  echo "postgres $PG_VERSION (scratch cluster, Unix socket): $PG_SETTINGS; nimbus pool ${POOL_SIZE:-default}, event loops ${EVENT_LOOPS:-default}"
  echo "workload: AppLocker, per user a Mac (long-poll on commands) and an iPhone (long-poll on events), ${SECS}s per step;"
  echo "  mix create/burst(50)/changes/query(100)/photo(${PHOTO_KB} KB)/command = $MIX; active users $ACTIVE of N;" \
       "rate ${RATE:-N x $ACTIVE / ${THINK}s}; $EXPIRED expired events per user; prune every $PRUNE_INTERVAL; $PHOTO_USERS photo users;" \
       "first long-poll waits: $([ -n "${BENCH_SYNC_PARK:-}" ] && echo "all 55 s (BENCH_SYNC_PARK: a restart's herd)" || echo "spread over 1-55 s")"
  for n in "${STEP_RESULTS[@]}"; do
    r=$WORK/result-$n.txt
    R=$(cat "$r")
    line() { grep -m1 "^$1" <<<"$R"; }
    rate=$(field "$(line users)" rate)
    rss=$(line rss) cpu=$(line cpu) prune=$(line 'prune runs') load=$(line load) waiters=$(line waiters) parked=$(line parked)
    wall=$(cut -d' ' -f2 <<<"$cpu") cn=$(cut -d' ' -f3 <<<"$cpu") cp=$(cut -d' ' -f4 <<<"$cpu") cl=$(cut -d' ' -f5 <<<"$cpu") co=$(cut -d' ' -f6 <<<"$cpu")
    nact=$(field "$load" active_users)
    total_req=$(grep '^op ' <<<"$R" | awk '{s += $4} END {print s + 0}')
    echo "---- $n users: $rate operations/s, $nact active users; $total_req requests in the window (incl. re-parks)"
    printf '  %-8s %8s %9s %9s %9s %7s %7s %7s   %s\n' op count p50_ms p99_ms max_ms non2xx itemerr sockerr "p99 <= ${P99_TARGET} ms"
    step_ok=1 step_err=0
    for op in $OPS; do
      l=$(grep "^op $op " <<<"$R")
      c=$(field "$l" n) p50=$(field "$l" p50) p99=$(field "$l" p99) mx=$(field "$l" max)
      e1=$(field "$l" non2xx) e2=$(field "$l" item_errors) e3=$(field "$l" sockerr)
      v=$( ((c > 0)) && verdict "$p99 <= $P99_TARGET" || echo "-")
      [ "$v" = MISS ] && step_ok=""
      step_err=$((step_err + e1 + e2 + e3))
      printf '  %-8s %8s %9s %9s %9s %7s %7s %7s   %s\n' "$op" "$c" "$p50" "$p99" "$mx" "$e1" "$e2" "$e3" "$v"
    done
    printf '  %-8s %8s %9s %9s %9s %7s   %s\n' wake count p50_ms p99_ms max_ms missed "p99 <= ${WAKE_TARGET} ms"
    for dev in phone mac; do
      l=$(grep "^wake $dev " <<<"$R")
      c=$(field "$l" n) p99=$(field "$l" p99) missed=$(field "$l" missed)
      v=$( ((c > 0)) && verdict "$p99 <= $WAKE_TARGET" || echo "-")
      [ "$v" = MISS ] && step_ok=""
      step_err=$((step_err + missed))
      printf '  %-8s %8s %9s %9s %9s %7s   %s\n' "$dev" "$c" "$(field "$l" p50)" "$p99" "$(field "$l" max)" "$missed" "$v"
    done
    echo "  (wake: write sent -> the other device's long-poll answered with it; phone: Mac's create/burst, mac: phone's command)"
    macw=$(field "$rss" macw)
    ((macw < n)) && echo "  NOTE: only $macw of $n Macs held a long-poll: $(field "$rss" nofile) file descriptors per process (hard limit) cannot hold 2 x $n connections plus the rest"
    echo "  long-polls ($n phones + $macw Macs; nimbus had $(field "$rss" fds) descriptors open while parked): $parked; in the window: timeouts $(field "$waiters" timeouts), woken by the prune $(field "$waiters" prune_wakes)," \
         "other $(field "$waiters" other), lost $(field "$waiters" lost), parked at the end $(field "$waiters" parked_at_end)"
    step_err=$((step_err + $(field "$waiters" lost) + $(field "$parked" failed)))
    echo "  load: $load"
    rb=$(field "$rss" before) rp=$(field "$rss" parked) re=$(field "$rss" end)
    echo "  memory (nimbus RSS): start $(field "$rss" start) KB, synced $rb KB, $((n + macw)) parked $rp KB (waiters gauge $(field "$rss" gauge))," \
         "end $re KB => $(awk -v a="$rp" -v b="$rb" -v n="$n" 'BEGIN {printf "%.2f", (a - b) / n}') KB per user parked" \
         "($(awk -v a="$rp" -v b="$rb" -v n="$(( n + macw ))" 'BEGIN {printf "%.2f", (a - b) / n}') KB per long-poll)," \
         "$(awk -v a="$re" -v b="$rb" -v n="$n" 'BEGIN {printf "%.2f", (a - b) / n}') KB per user at the end"
    echo "  CPU over ${wall}s (seconds): nimbus $cn, postgres $cp, dayload $cl, other $co (cores: $(awk -v w="$wall" -v a="$cn" -v b="$cp" -v c="$cl" -v d="$co" 'BEGIN {printf "%.2f/%.2f/%.2f/%.2f", a / w, b / w, c / w, d / w}') nimbus/pg/load/other)"
    echo "  server CPU (nimbus + postgres): $(awk -v a="$cn" -v b="$cp" -v u="$nact" -v w="$wall" 'BEGIN {printf "%.0f", (a + b) * 1e6 / (u * w)}') µs per active user-second," \
         "$(awk -v a="$cn" -v b="$cp" -v u="$n" -v w="$wall" 'BEGIN {printf "%.1f", (a + b) * 1e6 / (u * w)}') µs per user-second," \
         "$(awk -v a="$cn" -v b="$cp" -v r="$total_req" 'BEGIN {printf "%.0f", (r > 0 ? (a + b) * 1e6 / r : 0)}') µs per request"
    ran=$(field "$prune" runs) removed=$(field "$prune" removed) left=$(field "$prune" left)
    echo "  pruning job: $ran run(s) finished during the step, $removed records removed in $(field "$prune" seconds) s of pruning;" \
         "$left of $(field "$prune" expired) expired events left (written in $(field "$prune" insert_s) s just before the window)"
    echo "  prune runs (seconds from the window's start, start..end): $(cut -d' ' -f2- <<<"$(line prunewhen)");" \
         "phones woken by its deletions from +$(grep '^tl ' <<<"$R" | awk '$16 > 0 {print $2; exit}') s to +$(grep '^tl ' <<<"$R" | awk '$16 > 0 {s = $2} END {print s}') s"
    echo "  prune log: $(cut -d' ' -f2- <<<"$(line prunelog)")"
    if [ -s "$WORK/statements-$n.txt" ]; then
      echo "  the slowest single statements of the window (pg_stat_statements: calls, total s, mean ms, max ms, statement):"
      awk -F'|' '{printf "    %7s %7ss %8sms %8sms  %s\n", $1, $2, $3, $4, $5}' "$WORK/statements-$n.txt"
    fi
    echo "  the 5 worst seconds of the window (by the worst operation latency; long-poll answers arriving in that second):"
    grep '^tl ' <<<"$R" | sort -k6,6 -g -r | head -5 | sort -k2,2 -n | awk '{printf "    +%2ds: %5d ops, worst %8.1f ms; %5d parks, worst %7.1f ms; %5d long-poll answers (%d timeouts, %d prune wakes)\n", $2, $4, $6, $8, $10, $12, $14, $16}'
    errs_txt=$(head -5 "$WORK/step-$n.out.err" 2>/dev/null | cut -c1-240)
    [ -n "$errs_txt" ] && { echo "  dayload complaints (first 5 of $(wc -l <"$WORK/step-$n.out.err")):"; sed 's/^/    /' <<<"$errs_txt"; }
    echo "  nimbus: stopped with $(cut -d' ' -f3- <<<"$(line 'nimbus stop')") (log warnings/errors during the step)"
    grep -a -m 3 -E "$PROBLEMS" "$WORK/nimbus-$n.log" | cut -c1-240 | sed 's/^/    /'
    if ((step_err > 0)); then FAILED+="$n "; step_ok=""; fi
    ((ran > 0)) || echo "  NOTE: no prune run finished during the step (the window is shorter than BENCH_PRUNE_INTERVAL, or the run outlasted it)"
    if [ -n "$step_ok" ] && [ "$left" = "$(field "$prune" expired)" ]; then
      echo "  step verdict: PASS, but without the prune (none of its expired events was removed during the step)"
      HOLDS=$n
    elif [ -n "$step_ok" ]; then
      echo "  step verdict: PASS (every device request p99 <= $P99_TARGET ms, wake p99 <= $WAKE_TARGET ms, no errors)"
      HOLDS=$n
    else
      echo "  step verdict: MISS$( ((step_err > 0)) && echo " ($step_err errors, missed wakes or lost long-polls)")"
      [ -z "$BREAKS" ] && BREAKS=$n
    fi
  done
  echo "----"
  if [ -z "$BREAKS" ]; then
    echo "targets (device p99 <= $P99_TARGET ms, wake p99 <= $WAKE_TARGET ms, no errors): hold at every step, up to $HOLDS users"
  elif [ -z "$HOLDS" ]; then
    echo "targets (device p99 <= $P99_TARGET ms, wake p99 <= $WAKE_TARGET ms, no errors): missed at every step, from $BREAKS users"
  else
    echo "targets (device p99 <= $P99_TARGET ms, wake p99 <= $WAKE_TARGET ms, no errors): hold at $HOLDS users (the largest passing step);" \
         "they stop holding at $BREAKS users (the first failing step)"
  fi
  echo "took $(( $(date +%s) - T0 )) s"
  echo "=================================================================="
}
[ -z "$FAILED" ] || die "errors (non-2xx, item or socket errors, missed wakes, lost long-polls) at: $FAILED"
