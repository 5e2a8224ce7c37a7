#!/usr/bin/env bash
# nginx and HAProxy in front of `nimbus serve` instances, with the configs we ship: sourced after
# lib.sh by the scenarios that test Nimbus behind a TLS-terminating proxy.
#
# The shipped deploy/nginx.conf and deploy/haproxy.cfg are templated mechanically (sed) for ports,
# upstream server lines and file paths only, so that a mistake in them shows in the test. Every
# other line is used as shipped. nginx gets a minimal main config around the snippet (daemon off,
# pid, logs and temp directories under $TEST_TMP); HAProxy runs in the foreground (-db) with two
# extra files beside the shipped one: a `global` section and a statistics listener.
#
#   make_test_cert
#       A self-signed certificate for 127.0.0.1 and localhost (openssl CLI) in $TEST_TMP/ssl as
#       fullchain.pem, privkey.pem and combined.pem (HAProxy's crt); exports CURL_CA_BUNDLE so that
#       every curl of the scenario (lib.sh's helpers included) verifies the proxies' TLS with it.
#       start_nginx / start_haproxy call it when it has not run.
#   start_nginx PORT UPSTREAM_PORT...
#       nginx on https://127.0.0.1:PORT over 127.0.0.1:UPSTREAM_PORT... Sets NGINX_PID (the master,
#       tracked by lib.sh's EXIT trap), NGINX_URL and PROXY_URL (https://127.0.0.1:PORT), NGINX_DIR
#       (main.conf, the templated nimbus.conf, error.log, access.log with the upstream of each
#       request, client_body_temp and proxy_temp).
#   start_haproxy PORT UPSTREAM_PORT...
#       HAProxy likewise. Sets HAPROXY_PID, HAPROXY_URL and PROXY_URL, HAPROXY_DIR (nimbus.cfg, the
#       templated shipped file; haproxy.log, its alerts) and HAPROXY_STATS_URL (CSV statistics: per-server
#       requests, 5xx, retries, redispatches and UP/DOWN).
#   NGINX_PLAIN_PORT / HAPROXY_PLAIN_PORT (environment, optional)
#       One more listener on that port without TLS, beside the TLS one and in the same server block
#       or frontend, for clients that cannot speak TLS (Tests/soak/nmcheck.c). Test-only: it is
#       not in the shipped configs.
#   free_port
#       An unused TCP port of 127.0.0.1 below the ephemeral range (where servers on port 0 land).
#   vm_kib PID FIELD
#       A /proc/PID/status field in KiB (VmRSS, VmHWM).
#
# A missing nginx or haproxy binary fails the scenario with what to install; with
# NIMBUS_IT_SKIP_MISSING_PROXY=1 the scenario is skipped instead (prints `skip - ...`, exits 0).

# _proxy_binary NAME PACKAGE: sets NAME_EXE (NGINX_EXE, HAPROXY_EXE) to the program's path
# (find_tool: Debian puts both in /usr/sbin, off a normal user's PATH); fails (or skips the
# scenario) when it is not installed.
_proxy_binary() {
  local exe var
  var=$(printf '%s_EXE' "$1" | tr '[:lower:]' '[:upper:]')
  if exe=$(find_tool "$1"); then printf -v "$var" '%s' "$exe"; return 0; fi
  if [ "${NIMBUS_IT_SKIP_MISSING_PROXY:-}" = 1 ]; then
    printf 'skip - %s is not installed (apt-get install %s); NIMBUS_IT_SKIP_MISSING_PROXY=1\n' "$1" "$2"
    exit 0
  fi
  fail "$1 is not installed: apt-get install $2 (Tests/run.sh installs it; NIMBUS_IT_SKIP_MISSING_PROXY=1 skips this scenario)"
}

# free_port: an unused TCP port of 127.0.0.1 (20000..32767, below Linux's ephemeral range).
free_port() {
  local port hex tries=0
  while [ "$tries" -lt 200 ]; do
    tries=$((tries + 1))
    port=$(( 20000 + RANDOM % 12768 ))
    printf -v hex ':%04X ' "$port"
    # Any socket with that local port (column 2 of /proc/net/tcp*) rules it out, and so does a
    # port handed out before (not listening yet).
    grep -qx "$port" "$TEST_TMP/.ports" 2>/dev/null && continue
    # (Process substitution: under pipefail, `cut | grep -q` fails when grep exits at its match.)
    if ! grep -q "$hex" < <(cut -c1-60 /proc/net/tcp /proc/net/tcp6 2>/dev/null); then
      echo "$port" >>"$TEST_TMP/.ports"
      echo "$port"
      return 0
    fi
  done
  fail "no free TCP port found"
}

# make_test_cert: the self-signed certificate in $TEST_TMP/ssl; exports CURL_CA_BUNDLE.
make_test_cert() {
  [ -s "$TEST_TMP/ssl/combined.pem" ] && return 0
  local openssl
  openssl=$(find_tool openssl) || fail "openssl is not installed (apt-get install openssl)"
  mkdir -p "$TEST_TMP/ssl"
  "$openssl" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$TEST_TMP/ssl/privkey.pem" -out "$TEST_TMP/ssl/fullchain.pem" >"$TEST_TMP/ssl/openssl.log" 2>&1 \
    || fail "openssl could not make a test certificate: $(cat "$TEST_TMP/ssl/openssl.log")"
  cat "$TEST_TMP/ssl/fullchain.pem" "$TEST_TMP/ssl/privkey.pem" >"$TEST_TMP/ssl/combined.pem"
  chmod 644 "$TEST_TMP/ssl"/*.pem
  export CURL_CA_BUNDLE="$TEST_TMP/ssl/fullchain.pem"
}

# _wait_listening PORT PID WHAT LOG: waits up to 10 s until 127.0.0.1:PORT accepts; fails (with the
# tail of LOG) when PID exits or the port stays closed.
_wait_listening() {
  local port=$1 pid=$2 what=$3 log=$4 deadline=$(( $(now_ms) + 10000 ))
  while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! process_alive "$pid"; then
      tail -n 20 "$log" >&2
      fail "$what exited before listening on 127.0.0.1:$port"
    fi
    [ "$(now_ms)" -lt "$deadline" ] || { tail -n 20 "$log" >&2; fail "$what does not listen on 127.0.0.1:$port after 10 s"; }
    sleep 0.05
  done
}

# _server_lines TEMPLATE_LINE PORT...: the shipped server line once per upstream port, numbered
# (the address replaced; the options after it kept as shipped).
_server_lines() {
  local line=$1 port n=0
  shift
  for port in "$@"; do
    n=$((n + 1))
    printf '%s\n' "$line" | sed -E "s/127\.0\.0\.1:[0-9]+/127.0.0.1:$port/; s/^([[:space:]]*server[[:space:]]+)[a-z]+([[:space:]]+127)/\\1n$n\\2/"
  done
}

# start_nginx PORT UPSTREAM_PORT...: nginx with the shipped snippet (see the top of this file).
start_nginx() {
  _proxy_binary nginx nginx
  make_test_cert
  local port=$1
  shift
  [ $# -ge 1 ] || fail "start_nginx PORT UPSTREAM_PORT...: no upstream"
  NGINX_DIR=$TEST_TMP/nginx-$port
  mkdir -p "$NGINX_DIR"
  local shipped=$REPO_DIR/deploy/nginx.conf template servers plain=""
  # The first `server 127.0.0.1:N...;` line of the upstream block is the template of all of them;
  # the commented example lines are dropped.
  template=$(grep -E -m1 '^[[:space:]]*server[[:space:]]+127\.0\.0\.1:[0-9]+' "$shipped") \
    || fail "deploy/nginx.conf has no 'server 127.0.0.1:PORT' line in its upstream block"
  servers=$(_server_lines "$template" "$@" | sed 's/$/\\/')
  [ -n "${NGINX_PLAIN_PORT:-}" ] && plain="    listen 127.0.0.1:$NGINX_PLAIN_PORT;   # test-only plain listener\\
"
  sed -E \
    -e "/^[[:space:]]*#?[[:space:]]*server[[:space:]]+127\.0\.0\.1:[0-9]+/{x;/^done$/{x;d};s/.*/done/;x;c\\
${servers%\\}
}" \
    -e "s|^([[:space:]]*)listen[[:space:]]+443([[:space:];])|${plain}\\1listen 127.0.0.1:$port\\2|" \
    -e "s#/etc/ssl/nimbus/#$TEST_TMP/ssl/#g" \
    "$shipped" >"$NGINX_DIR/nimbus.conf"
  grep -q "listen 127.0.0.1:$port" "$NGINX_DIR/nimbus.conf" || fail "deploy/nginx.conf: no 'listen 443' line to template"
  cat >"$NGINX_DIR/main.conf" <<EOF
# Test wrapper around deploy/nginx.conf (a conf.d snippet), made by Tests/integration/proxies.sh.
daemon off;
worker_processes 1;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/error.log notice;
events { worker_connections 1024; }
http {
    client_body_temp_path $NGINX_DIR/client_body_temp;
    proxy_temp_path $NGINX_DIR/proxy_temp;
    fastcgi_temp_path $NGINX_DIR/fastcgi_temp;
    uwsgi_temp_path $NGINX_DIR/uwsgi_temp;
    scgi_temp_path $NGINX_DIR/scgi_temp;
    log_format upstreams '\$msec \$status \$request_method \$uri up=\$upstream_addr upstatus=\$upstream_status t=\$request_time';
    access_log $NGINX_DIR/access.log upstreams;
    include $NGINX_DIR/nimbus.conf;
}
EOF
  "$NGINX_EXE" -t -q -e "$NGINX_DIR/error.log" -p "$NGINX_DIR" -c "$NGINX_DIR/main.conf" >"$NGINX_DIR/test.log" 2>&1 \
    || fail "nginx rejects the templated deploy/nginx.conf: $(cat "$NGINX_DIR/test.log" "$NGINX_DIR/error.log" 2>/dev/null | tail -n 5)"
  "$NGINX_EXE" -e "$NGINX_DIR/error.log" -p "$NGINX_DIR" -c "$NGINX_DIR/main.conf" >>"$NGINX_DIR/test.log" 2>&1 &
  NGINX_PID=$!
  track_pid "$NGINX_PID"
  # Kept with the server logs when the scenario fails (NIMBUS_IT_ARTIFACTS).
  echo "$NGINX_DIR/error.log" >>"$TEST_TMP/.logs"
  _wait_listening "$port" "$NGINX_PID" nginx "$NGINX_DIR/error.log"
  [ -n "${NGINX_PLAIN_PORT:-}" ] && _wait_listening "$NGINX_PLAIN_PORT" "$NGINX_PID" nginx "$NGINX_DIR/error.log"
  NGINX_URL=https://127.0.0.1:$port
  PROXY_URL=$NGINX_URL
  export NGINX_PID NGINX_URL NGINX_DIR PROXY_URL
  note "nginx pid $NGINX_PID on $NGINX_URL${NGINX_PLAIN_PORT:+ (plain http on $NGINX_PLAIN_PORT)} over ports $* (config $NGINX_DIR/nimbus.conf)"
}

# start_haproxy PORT UPSTREAM_PORT...: HAProxy with the shipped config (see the top of this file).
start_haproxy() {
  _proxy_binary haproxy haproxy
  make_test_cert
  local port=$1
  shift
  [ $# -ge 1 ] || fail "start_haproxy PORT UPSTREAM_PORT...: no upstream"
  HAPROXY_DIR=$TEST_TMP/haproxy-$port
  mkdir -p "$HAPROXY_DIR"
  local shipped=$REPO_DIR/deploy/haproxy.cfg template servers plain="" stats_port
  template=$(grep -E -m1 '^[[:space:]]*server[[:space:]]+[a-z]+[[:space:]]+127\.0\.0\.1:[0-9]+' "$shipped") \
    || fail "deploy/haproxy.cfg has no 'server NAME 127.0.0.1:PORT' line in its backend"
  servers=$(_server_lines "$template" "$@" | sed 's/$/\\/')
  [ -n "${HAPROXY_PLAIN_PORT:-}" ] && plain="    bind 127.0.0.1:$HAPROXY_PLAIN_PORT   # test-only plain listener\\
"
  sed -E \
    -e "/^[[:space:]]*#?[[:space:]]*server[[:space:]]+[a-z]+[[:space:]]+127\.0\.0\.1:[0-9]+/{x;/^done$/{x;d};s/.*/done/;x;c\\
${servers%\\}
}" \
    -e "s|^([[:space:]]*)bind[[:space:]]+:443([[:space:]])|${plain}\\1bind 127.0.0.1:$port\\2|" \
    -e "s#/etc/ssl/nimbus/#$TEST_TMP/ssl/#g" \
    "$shipped" >"$HAPROXY_DIR/nimbus.cfg"
  grep -q "bind 127.0.0.1:$port" "$HAPROXY_DIR/nimbus.cfg" || fail "deploy/haproxy.cfg: no 'bind :443' line to template"
  stats_port=$(free_port)
  cat >"$HAPROXY_DIR/global.cfg" <<EOF
# Test wrapper for deploy/haproxy.cfg, made by Tests/integration/proxies.sh.
global
    # HAProxy's own alerts (a server going DOWN) into haproxy.log; the shipped file logs no requests.
    log stdout format raw local0
    maxconn 4096
EOF
  # Loaded after the shipped file, so it inherits its defaults section.
  cat >"$HAPROXY_DIR/stats.cfg" <<EOF
listen test-stats
    bind 127.0.0.1:$stats_port
    stats enable
    stats uri /stats
EOF
  "$HAPROXY_EXE" -c -q -f "$HAPROXY_DIR/global.cfg" -f "$HAPROXY_DIR/nimbus.cfg" -f "$HAPROXY_DIR/stats.cfg" >"$HAPROXY_DIR/check.log" 2>&1 \
    || fail "haproxy rejects the templated deploy/haproxy.cfg: $(tail -n 5 "$HAPROXY_DIR/check.log")"
  "$HAPROXY_EXE" -db -f "$HAPROXY_DIR/global.cfg" -f "$HAPROXY_DIR/nimbus.cfg" -f "$HAPROXY_DIR/stats.cfg" >"$HAPROXY_DIR/haproxy.log" 2>&1 &
  HAPROXY_PID=$!
  track_pid "$HAPROXY_PID"
  echo "$HAPROXY_DIR/haproxy.log" >>"$TEST_TMP/.logs"
  _wait_listening "$port" "$HAPROXY_PID" haproxy "$HAPROXY_DIR/haproxy.log"
  [ -n "${HAPROXY_PLAIN_PORT:-}" ] && _wait_listening "$HAPROXY_PLAIN_PORT" "$HAPROXY_PID" haproxy "$HAPROXY_DIR/haproxy.log"
  HAPROXY_URL=https://127.0.0.1:$port
  HAPROXY_STATS_URL="http://127.0.0.1:$stats_port/stats;csv"
  PROXY_URL=$HAPROXY_URL
  export HAPROXY_PID HAPROXY_URL HAPROXY_DIR HAPROXY_STATS_URL PROXY_URL
  note "haproxy pid $HAPROXY_PID on $HAPROXY_URL${HAPROXY_PLAIN_PORT:+ (plain http on $HAPROXY_PLAIN_PORT)} over ports $* (config $HAPROXY_DIR/nimbus.cfg)"
}

# vm_kib PID FIELD: the /proc/PID/status field FIELD (VmRSS, VmHWM) in KiB, empty when PID is gone.
vm_kib() {
  awk -v f="$2:" '$1 == f {print $2; exit}' "/proc/$1/status" 2>/dev/null
}
