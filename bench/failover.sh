#!/usr/bin/env bash
# What deploy/ha/ costs a write: one `nimbus serve` through HAProxy (deploy/ha/haproxy.cfg) and one
# connected to the primary's port directly, on the same database of the deploy/ha/ topology
# (deploy/ha/ha.sh, loopback), under bench/recload.c (records/modify, 1 record per request, 32
# zones, BENCH_CLIENTS keep-alive clients, BENCH_SECONDS per run, rounds interleaved): first with
# the synchronous standby (synchronous_mode: true, as shipped), then with it turned off
# (`patronictl edit-config -s synchronous_mode=false`: asynchronous replication). Prints req/s and
# p50/p99 per case (medians over BENCH_ROUNDS rounds).
#
#   bash bench/failover.sh
#
# Knobs: BENCH_CLIENTS=16 BENCH_SECONDS=8 BENCH_ROUNDS=2 NIMBUS_BIN (default: the debug build).
# The failover figures themselves (time to the first write, 503s) come from the scenarios:
#   NIMBUS_FAILOVER_FIGURES=/tmp/figures bash Tests/integration/run.sh 96-failover (docs/scaling.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
CLIENTS=${BENCH_CLIENTS:-16} SECONDS_PER_RUN=${BENCH_SECONDS:-8} ROUNDS=${BENCH_ROUNDS:-2}
NIMBUS_BIN=${NIMBUS_BIN:-$(swift build --show-bin-path)/nimbus}
[ -x "$NIMBUS_BIN" ] || die "no nimbus binary at $NIMBUS_BIN (swift build --product nimbus)"

WORK=$(mktemp -d /tmp/nimbus-bench-failover.XXXXXX)
chmod 755 "$WORK"
pids=()
finish() {
  local pid
  for pid in "${pids[@]}"; do stop_pid "$pid" TERM 10; done
  bash deploy/ha/ha.sh down "$WORK/ha" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap finish EXIT

port() { echo $(( 20000 + RANDOM % 12000 )); }
export HA_ETCD_PORT=$(port) HA_ETCD_PEER_PORT=$(port) HA_PG1_PORT=$(port) HA_PG2_PORT=$(port) HA_REST1_PORT=$(port) \
  HA_REST2_PORT=$(port) HA_PROXY_PORT=$(port)
bash deploy/ha/ha.sh up "$WORK/ha" >"$WORK/ha-up.log" 2>&1 || { tail "$WORK/ha-up.log"; die "deploy/ha/ha.sh up failed"; }
eval "$(cat "$WORK/ha/env")"
leader_port=$HA_PG1_PORT
[ "$(bash deploy/ha/ha.sh leader "$WORK/ha")" = node2 ] && leader_port=$HA_PG2_PORT
direct_url="postgresql://nimbus:change-me-nimbus@127.0.0.1:$leader_port/nimbus"

cc -O2 -pthread -o "$WORK/recload" bench/recload.c

# serve NAME URL: an instance; sets NAME_PORT.
serve() {
  local name=$1 url=$2 port log=$WORK/$1.log
  port=$(port)
  "$NIMBUS_BIN" serve --listen "127.0.0.1:$port" --admin-listen 127.0.0.1:0 --database-url "$url" \
    --requests-per-second-per-token 0 --prune-interval 0s >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do grep -q 'listening on' "$log" && break; sleep 0.1; done
  grep -q 'listening on' "$log" || die "$name did not start: $(tail -n 5 "$log")"
  printf -v "${name}_PORT" '%s' "$port"
}
serve proxied "$HA_DATABASE_URL"
serve direct "$direct_url"

admin() { "$NIMBUS_BIN" "$@" --database-url "$HA_DATABASE_URL"; }
admin user add bench >/dev/null
token=$(admin token issue bench --device bench | sed -n 's/^token: //p')
[ -n "$token" ] || die "no token"
path=/database/1/iCloud.com.mirxa.AppLocker/development/private
zones=$(seq -f 'z%g' 1 32 | paste -sd,)
body=$(seq -f '{"operationType":"create","zone":{"zoneID":{"zoneName":"z%g"}}}' 1 32 | paste -sd,)
curl -sf -o /dev/null -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  --data-binary "{\"operations\":[$body]}" "http://127.0.0.1:$proxied_PORT$path/zones/modify" || die "zones/modify failed"

declare -A results=()
# run LABEL PORT: one recload run, its line appended to results[LABEL].
run() {
  local line
  line=$("$WORK/recload" modify 127.0.0.1 "$2" "$path/records/modify" "$token" "$CLIENTS" "$SECONDS_PER_RUN" 1 "$zones" "$1-$RANDOM")
  results[$1]+="$line"$'\n'
  say "$1: $(sed -E 's/.*req_per_s=([0-9.]+).*p50_ms=([0-9.]+).*p99_ms=([0-9.]+).*/\1 req\/s, p50 \2 ms, p99 \3 ms/' <<<"$line")"
}
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { grep -o "$2=[0-9.]*" <<<"${results[$1]}" | cut -d= -f2 | median; }

say "synchronous standby (as shipped): $CLIENTS clients, ${SECONDS_PER_RUN}s, $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < ROUNDS; r++)); do run sync-haproxy "$proxied_PORT"; run sync-direct "$direct_PORT"; done
run_as=()
[ "$(id -u)" -eq 0 ] && run_as=(runuser -u "$(stat -c %U "$WORK/ha/node1.yml")" --)
"${run_as[@]}" patronictl -c "$WORK/ha/node1.yml" edit-config -s synchronous_mode=false --force >/dev/null
for _ in $(seq 1 50); do
  [ -z "$(/usr/lib/postgresql/15/bin/psql "$HA_DATABASE_URL" -XAtc 'SHOW synchronous_standby_names')" ] && break
  sleep 0.2
done
say "asynchronous (synchronous_mode false; synchronous_standby_names '$(/usr/lib/postgresql/15/bin/psql "$HA_DATABASE_URL" -XAtc 'SHOW synchronous_standby_names')')"
for ((r = 0; r < ROUNDS; r++)); do run async-haproxy "$proxied_PORT"; run async-direct "$direct_PORT"; done

echo
echo "================ deploy/ha write cost ($(basename "$NIMBUS_BIN") $(dirname "$NIMBUS_BIN" | xargs basename), $CLIENTS clients, 1 record/request, 32 zones, medians of $ROUNDS) ================"
printf '%-16s %10s %8s %8s\n' case "req/s" "p50 ms" "p99 ms"
for label in sync-haproxy sync-direct async-haproxy async-direct; do
  printf '%-16s %10s %8s %8s\n' "$label" "$(field "$label" req_per_s)" "$(field "$label" p50_ms)" "$(field "$label" p99_ms)"
done
