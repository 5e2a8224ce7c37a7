#!/usr/bin/env bash
# The failover topology of deploy/ha/ on one machine's loopback: etcd, two PostgreSQL 15 nodes
# under Patroni (synchronous replication), HAProxy routing port HA_PROXY_PORT to the primary. Runs
# the shipped etcd.yml, patroni-node1.yml, patroni-node2.yml and haproxy.cfg, templated for ports
# and paths only, as an unprivileged user (PostgreSQL refuses root): the caller when not root,
# else `postgres` when that user exists, else `nimbus` (created). Used by the failover scenarios
# (Tests/integration/scenarios/96-98) and by hand (docs/scaling.md, "Failover"):
#
#   bash deploy/ha/ha.sh up DIR      start everything in DIR; wait (bounded) for a primary and its
#                                    synchronous standby; create role and database `nimbus`; print
#                                    the exports (also in DIR/env): HA_DATABASE_URL, HA_DIR, ports
#   bash deploy/ha/ha.sh down DIR    stop it all by PID (Patroni stops its PostgreSQL), bounded
#   bash deploy/ha/ha.sh status DIR  patronictl list
#   bash deploy/ha/ha.sh leader DIR  the leader's name (node1 or node2), empty when there is none
#
# Ports (environment; defaults are the shipped files'): HA_ETCD_PORT 2379, HA_ETCD_PEER_PORT 2380,
# HA_PG1_PORT 5432, HA_PG2_PORT 5433, HA_REST1_PORT 8008, HA_REST2_PORT 8009, HA_PROXY_PORT 5000.
# HA_SYNCHRONOUS_MODE=false (the negative control's change): asynchronous replication, and a standby
#   promoted however far behind (maximum_lag_on_failover 1 GiB instead of 1 MiB: 2 s of the checker's
#   writes held back can pass 1 MiB of WAL, and Patroni then promotes no one: the likely cause of one
#   run where no standby was promoted within 60 s).
# Programs: etcd (etcd-server), patroni, patronictl, haproxy, /usr/lib/postgresql/15/bin.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ETCD_PORT=${HA_ETCD_PORT:-2379} ETCD_PEER_PORT=${HA_ETCD_PEER_PORT:-2380}
PG1_PORT=${HA_PG1_PORT:-5432} PG2_PORT=${HA_PG2_PORT:-5433}
REST1_PORT=${HA_REST1_PORT:-8008} REST2_PORT=${HA_REST2_PORT:-8009}
PROXY_PORT=${HA_PROXY_PORT:-5000}
NIMBUS_PASSWORD=change-me-nimbus

say() { printf '[ha %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }

tool() {
  local name=$1 path
  for path in "$(command -v "$name" 2>/dev/null || true)" "/usr/sbin/$name" "/usr/bin/$name" "/sbin/$name"; do
    [ -n "$path" ] && [ -x "$path" ] && { echo "$path"; return 0; }
  done
  return 1
}

# The user everything runs as, and the prefix that runs a command as that user.
run_as=()
ha_user=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
  ha_user=postgres
  if ! id "$ha_user" >/dev/null 2>&1; then
    ha_user=nimbus
    id nimbus >/dev/null 2>&1 || "$(tool useradd)" --system --no-create-home --shell /usr/sbin/nologin nimbus
  fi
  run_as=("$(tool runuser)" -u "$ha_user" --)
fi

# alive PIDFILE: the PID in PIDFILE runs.
alive() { local pid; pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

# start NAME LOG COMMAND...: COMMAND in the background as the user, its PID in DIR/NAME.pid.
start() {
  local name=$1 log=$2; shift 2
  # The program's own PID (not runuser's): it writes it, then becomes the program.
  rm -f "$DIR/$name.pid"
  ( cd "$DIR" && exec "${run_as[@]}" sh -c 'echo $$ >"$0"; exec "$@"' "$DIR/$name.pid" "$@" >"$log" 2>&1 </dev/null ) &
  wait_for 5 "$name's pid file" test -s "$DIR/$name.pid"
}

# wait_for SECONDS WHAT COMMAND...: COMMAND succeeds within SECONDS, else fail.
wait_for() {
  local seconds=$1 what=$2 deadline; shift 2
  deadline=$(( $(date +%s) + seconds ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "$what not within ${seconds}s (logs in $DIR)"
    sleep 0.2
  done
}

# rest PORT PATH: HTTP status of Patroni's REST endpoint.
rest() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1$2" || true; }
is_primary() { [ "$(rest "$1" /primary)" = 200 ]; }
is_sync() { [ "$(rest "$1" /sync)" = 200 ]; }
is_replica() { [ "$(rest "$1" /replica)" = 200 ]; }

# template SOURCE DEST: the shipped file with this run's ports and paths.
template() {
  sed -E \
    -e "s#127\.0\.0\.1:2379#127.0.0.1:$ETCD_PORT#g" -e "s#127\.0\.0\.1:2380#127.0.0.1:$ETCD_PEER_PORT#g" \
    -e "s#127\.0\.0\.1:5432#127.0.0.1:$PG1_PORT#g" -e "s#127\.0\.0\.1:5433#127.0.0.1:$PG2_PORT#g" \
    -e "s#127\.0\.0\.1:8008#127.0.0.1:$REST1_PORT#g" -e "s#127\.0\.0\.1:8009#127.0.0.1:$REST2_PORT#g" \
    -e "s#check port 8008#check port $REST1_PORT#; s#check port 8009#check port $REST2_PORT#" \
    -e "s#127\.0\.0\.1:5000#127.0.0.1:$PROXY_PORT#g" \
    -e "s#/var/lib/nimbus-ha#$DIR#g" -e "s#/var/log/nimbus-ha#$DIR/log#g" \
    "$1" >"$2"
  if [ "${HA_SYNCHRONOUS_MODE:-true}" = false ]; then
    sed -i -E -e 's/^([[:space:]]*synchronous_mode:) true/\1 false/' \
      -e 's/^([[:space:]]*maximum_lag_on_failover:) [0-9]+/\1 1073741824/' "$2"
  fi
}

up() {
  local etcd patroni haproxy
  etcd=$(tool etcd) || die "etcd is missing: apt-get install etcd-server"
  patroni=$(tool patroni) || die "patroni is missing: apt-get install patroni"
  haproxy=$(tool haproxy) || die "haproxy is missing: apt-get install haproxy"
  [ -x /usr/lib/postgresql/15/bin/postgres ] || die "PostgreSQL 15 is missing: apt-get install postgresql-15"
  mkdir -p "$DIR/etcd" "$DIR/node1" "$DIR/node2" "$DIR/log/node1" "$DIR/log/node2"
  chmod 755 "$DIR"
  chmod 700 "$DIR/etcd" "$DIR/node1" "$DIR/node2"
  template "$here/etcd.yml" "$DIR/etcd.yml"
  template "$here/patroni-node1.yml" "$DIR/node1.yml"
  template "$here/patroni-node2.yml" "$DIR/node2.yml"
  template "$here/haproxy.cfg" "$DIR/haproxy.cfg"
  [ "$(id -u)" -ne 0 ] || chown -R "$ha_user" "$DIR"

  start etcd "$DIR/log/etcd.log" "$etcd" --config-file "$DIR/etcd.yml"
  wait_for 30 "etcd answering on $ETCD_PORT" curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"
  start node1 "$DIR/log/node1.out" "$patroni" "$DIR/node1.yml"
  wait_for 90 "node1 bootstrapped as primary" is_primary "$REST1_PORT"
  start node2 "$DIR/log/node2.out" "$patroni" "$DIR/node2.yml"
  if [ "${HA_SYNCHRONOUS_MODE:-true}" = false ]; then
    wait_for 90 "node2 streaming" is_replica "$REST2_PORT"
  else
    wait_for 90 "node2 the synchronous standby" is_sync "$REST2_PORT"
  fi
  start haproxy "$DIR/log/haproxy.log" "$haproxy" -db -f "$DIR/haproxy.cfg"
  wait_for 10 "haproxy on $PROXY_PORT" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PROXY_PORT"

  # Nimbus's role and database, through the primary's port as the superuser.
  local superpass psql=/usr/lib/postgresql/15/bin/psql
  superpass=$(awk '/superuser:/ {f = 1} f && /password:/ {print $2; exit}' "$DIR/node1.yml")
  wait_for 30 "a query through haproxy" env PGPASSWORD="$superpass" "$psql" -X -q -h 127.0.0.1 -p "$PROXY_PORT" -U postgres -d postgres -c 'SELECT 1'
  PGPASSWORD="$superpass" "$psql" -X -q -h 127.0.0.1 -p "$PROXY_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE nimbus LOGIN PASSWORD '$NIMBUS_PASSWORD'" -c "CREATE DATABASE nimbus OWNER nimbus" >/dev/null \
    || die "could not create role and database nimbus"
  cat >"$DIR/env" <<EOF
export HA_DIR='$DIR' HA_DATABASE_URL='postgresql://nimbus:$NIMBUS_PASSWORD@127.0.0.1:$PROXY_PORT/nimbus' HA_SUPERUSER_PASSWORD='$superpass'
export HA_PROXY_PORT=$PROXY_PORT HA_PG1_PORT=$PG1_PORT HA_PG2_PORT=$PG2_PORT HA_REST1_PORT=$REST1_PORT HA_REST2_PORT=$REST2_PORT HA_ETCD_PORT=$ETCD_PORT
EOF
  say "up: primary node1 (:$PG1_PORT), synchronous standby node2 (:$PG2_PORT), haproxy :$PROXY_PORT, etcd :$ETCD_PORT"
  cat "$DIR/env"
}

# stop_pid PIDFILE SIGNAL SECONDS: SIGNAL to the PID, wait up to SECONDS, then SIGKILL.
stop_pid() {
  local file=$1 signal=$2 seconds=$3 pid i
  alive "$file" || return 0
  pid=$(cat "$file")
  kill "-$signal" "$pid" 2>/dev/null || true
  for ((i = 0; i < seconds * 10; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  say "pid $pid ($(basename "$file" .pid)) did not stop within ${seconds}s of SIG$signal; SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

down() {
  [ -d "$DIR" ] || return 0
  stop_pid "$DIR/haproxy.pid" TERM 5
  # Patroni stops its PostgreSQL (fast shutdown) on SIGTERM.
  stop_pid "$DIR/node2.pid" TERM 30
  stop_pid "$DIR/node1.pid" TERM 30
  local node pid i
  for node in node1 node2; do
    pid=$(head -n 1 "$DIR/$node/data/postmaster.pid" 2>/dev/null || true)
    for ((i = 0; i < 100; i++)); do
      [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ] || break
      sleep 0.1
    done
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ]; then
      say "$node's postmaster $pid outlived Patroni; SIGQUIT"
      kill -QUIT "$pid" 2>/dev/null || true
      sleep 2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  stop_pid "$DIR/etcd.pid" TERM 10
}

leader() {
  local rest
  for node in 1 2; do
    rest=$(sed -n -E 's#^  listen: 127\.0\.0\.1:([0-9]+)$#\1#p' "$DIR/node$node.yml" | head -n 1)
    is_primary "$rest" && { echo "node$node"; return 0; }
  done
  return 0
}

DIR=${2:-}
[ -n "$DIR" ] || { echo "usage: $0 up|down|status|leader DIR" >&2; exit 64; }
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
case $1 in
  up) up ;;
  down) down ;;
  status) "${run_as[@]}" "$(tool patronictl)" -c "$DIR/node1.yml" list ;;
  leader) leader ;;
  *) echo "usage: $0 up|down|status|leader DIR" >&2; exit 64 ;;
esac
