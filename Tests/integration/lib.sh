#!/usr/bin/env bash
# Helpers for the integration scenarios: each scenario sources this file, starts real `nimbus`
# binaries and talks to them with curl or raw bytes over bash's /dev/tcp.
#
# Needs only bash, curl, coreutils, grep and sed (no jq, no python3). The scratch PostgreSQL
# cluster comes from Tests/run.sh (or /tmp/nimbus-dev-pg.env during development):
#   NIMBUS_BIN                binary under test (default: the debug build of this checkout)
#   NIMBUS_TEST_DATABASE_URL  admin URL of the scratch cluster's `postgres` database
#   NIMBUS_TEST_PG_BIN        directory with psql, createdb, pg_ctl
#   NIMBUS_TEST_PG_RUN_AS     prefix that runs a command as the cluster's user, empty if not root
#                             (ignored when not root)
#
# Everything a scenario starts (servers, helper processes, databases, temporary directories,
# embedded clusters) is registered and torn down by an EXIT trap, pass or fail.

set -uo pipefail
# Byte semantics for ${#s} and ${s:0:n} (responses are split by Content-Length).
export LC_ALL=C

IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$IT_DIR/../.." && pwd)
SCENARIO_NAME=$(basename "$0" .sh)

# find_tool (programs outside a normal user's PATH), root_only (steps only root can run; a normal
# user skips them with a SKIP line that Tests/integration/run.sh sums up at the end).
source "$REPO_DIR/Tests/tools.sh"

if [ -z "${NIMBUS_TEST_DATABASE_URL:-}" ] && [ -f /tmp/nimbus-dev-pg.env ]; then
  eval "$(cat /tmp/nimbus-dev-pg.env)"
fi
: "${NIMBUS_TEST_PG_RUN_AS:=}"
# Only root can switch users: a normal user runs everything (its own cluster included) as itself.
is_root || NIMBUS_TEST_PG_RUN_AS=""
if [ -z "${NIMBUS_BIN:-}" ]; then
  NIMBUS_BIN="$(cd "$REPO_DIR" && swift build --show-bin-path)/nimbus"
fi
export NIMBUS_BIN
# The client programs the scenarios run as devices (nimbus-sync, the examples) come from the debug
# build even when NIMBUS_BIN is the release server (Tests/run.sh runs the scenarios on the release
# binary, the one users run; only `nimbus` is built in release there).
NIMBUS_CLIENT_BIN_DIR=${NIMBUS_CLIENT_BIN_DIR:-$(dirname "$NIMBUS_BIN")}
export NIMBUS_CLIENT_BIN_DIR
# Every server a scenario starts gets its admin console on a free port (the default, 8081, would
# collide between instances); admin_url finds it.
export NIMBUS_ADMIN_LISTEN=${NIMBUS_ADMIN_LISTEN:-127.0.0.1:0}

# Seconds to wait for `listening on` (an embedded cluster's first start runs initdb).
NIMBUS_START_TIMEOUT=${NIMBUS_START_TIMEOUT:-60}

# Per-scenario scratch space (in TMPDIR, else /tmp); 755 so that an embedded cluster's
# unprivileged user can reach it.
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/nimbus-it.XXXXXX")
chmod 755 "$TEST_TMP"
: >"$TEST_TMP/.pids" >"$TEST_TMP/.databases" >"$TEST_TMP/.data-dirs" >"$TEST_TMP/.logs"

NIMBUS_URL="" NIMBUS_PID="" NIMBUS_PORT="" NIMBUS_LOG=""
SERVER_COUNT=0

# MARK: - Reporting

# note MESSAGE: progress line in the scenario's output.
note() { printf '# %s\n' "$*"; }

# fail MESSAGE: ends the scenario as failed (the EXIT trap cleans up).
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}

# fail_later MESSAGE: records a failed expectation but lets the scenario go on checking the rest;
# the scenario then ends as failed.
fail_later() {
  printf 'FAIL: %s\n' "$*" >&2
  printf '%s\n' "$*" >>"$TEST_TMP/.failures"
}

# ok MESSAGE: one checked expectation.
ok() { printf 'ok - %s\n' "$*"; }

# now_ms: wall clock in milliseconds.
now_ms() { local t=${EPOCHREALTIME/./}; echo $(( t / 1000 )); }

# MARK: - Databases

# fresh_database: creates a uniquely named database in the scratch cluster and echoes its URL.
fresh_database() {
  [ -n "${NIMBUS_TEST_DATABASE_URL:-}" ] || fail "NIMBUS_TEST_DATABASE_URL is not set (run Tests/run.sh, or start the dev cluster)"
  local name="nimbus_it_${SCENARIO_NAME//[^a-zA-Z0-9]/_}_$$_${RANDOM}${RANDOM}"
  name=${name,,}
  echo "$name" >>"$TEST_TMP/.databases"
  "$NIMBUS_TEST_PG_BIN/createdb" --maintenance-db="$NIMBUS_TEST_DATABASE_URL" "$name" >&2 \
    || fail "createdb $name failed"
  database_url "$name"
}

# database_url NAME: the scratch cluster's URL with the database name replaced.
database_url() {
  printf '%s\n' "$NIMBUS_TEST_DATABASE_URL" | sed -E "s#^(postgres(ql)?://[^/?]*)/?[^?]*#\\1/$1#"
}

# psql_admin SQL...: runs SQL on the scratch cluster's admin database, unaligned output.
psql_admin() {
  "$NIMBUS_TEST_PG_BIN/psql" "$NIMBUS_TEST_DATABASE_URL" -X -q -At -v ON_ERROR_STOP=1 -c "$*"
}

# MARK: - Servers

# track_pid PID: a process the EXIT trap must stop if it is still running.
track_pid() { echo "$1" >>"$TEST_TMP/.pids"; }

# track_data_dir DIR: an embedded-database data directory whose cluster the EXIT trap stops.
track_data_dir() { echo "$1" >>"$TEST_TMP/.data-dirs"; }

# process_alive PID: true while PID runs (a zombie counts as gone).
process_alive() {
  local state=""
  [ -r "/proc/$1/stat" ] || return 1
  { read -r _ _ state _ <"/proc/$1/stat"; } 2>/dev/null || return 1
  [ "$state" != Z ] && [ "$state" != X ]
}

# start_nimbus [ARGS...]: starts `nimbus serve --listen 127.0.0.1:0 ARGS...` in the background,
# logging to its own file, and waits for `listening on`. Without --database-url / --data-dir
# (flag or environment) it gets a fresh database. Sets NIMBUS_URL, NIMBUS_PORT, NIMBUS_PID,
# NIMBUS_LOG. Fails the scenario if the server exits or does not listen in time.
start_nimbus() {
  local args=("$@") has_database=""
  local arg
  for arg in "${args[@]}"; do
    case $arg in --database-url|--database-url=*|--data-dir|--data-dir=*) has_database=1 ;; esac
  done
  [ -n "${NIMBUS_DATABASE_URL:-}${NIMBUS_DATA_DIR:-}" ] && has_database=1
  if [ -z "$has_database" ]; then
    local url
    url=$(fresh_database) || exit 1
    args+=(--database-url "$url")
  fi
  for arg in "${args[@]}"; do
    case $arg in --data-dir=*) track_data_dir "${arg#--data-dir=}" ;; esac
  done
  local index
  for index in "${!args[@]}"; do
    [ "${args[$index]}" = --data-dir ] && track_data_dir "${args[$((index + 1))]:-}"
  done

  SERVER_COUNT=$((SERVER_COUNT + 1))
  NIMBUS_LOG="$TEST_TMP/nimbus-$SERVER_COUNT.log"
  echo "$NIMBUS_LOG" >>"$TEST_TMP/.logs"
  : >"$NIMBUS_LOG"
  "$NIMBUS_BIN" serve --listen 127.0.0.1:0 "${args[@]}" >"$NIMBUS_LOG" 2>&1 &
  NIMBUS_PID=$!
  track_pid "$NIMBUS_PID"

  local deadline=$(( $(now_ms) + NIMBUS_START_TIMEOUT * 1000 ))
  while :; do
    NIMBUS_URL=$(grep -a -o -m1 'listening on http://[0-9.]*:[0-9]*' "$NIMBUS_LOG" | sed 's/^listening on //')
    [ -n "$NIMBUS_URL" ] && break
    if ! process_alive "$NIMBUS_PID"; then
      wait "$NIMBUS_PID"
      local status=$?
      tail -n 20 "$NIMBUS_LOG" >&2
      fail "nimbus serve ${args[*]} exited with status $status before listening"
    fi
    if [ "$(now_ms)" -gt "$deadline" ]; then
      tail -n 20 "$NIMBUS_LOG" >&2
      fail "nimbus serve did not print 'listening on' within ${NIMBUS_START_TIMEOUT}s"
    fi
    sleep 0.1
  done
  NIMBUS_PORT=${NIMBUS_URL##*:}
  note "nimbus pid $NIMBUS_PID listening on $NIMBUS_URL (log $NIMBUS_LOG)"
}

# admin_url: the admin console's base URL of the last started server (from its log; the admin
# listener starts just after the device listener). Fails when it does not appear within 5 s.
admin_url() {
  local url deadline=$(( $(now_ms) + 5000 ))
  while :; do
    url=$(grep -a -o -m1 'admin console on http://[0-9.]*:[0-9]*' "$NIMBUS_LOG" | sed 's/^admin console on //')
    [ -n "$url" ] && { printf '%s' "$url"; return 0; }
    [ "$(now_ms)" -gt "$deadline" ] && fail "nimbus did not print 'admin console on' within 5 s"
    sleep 0.05
  done
}

# wait_exit PID [SECONDS]: waits for a child process to end; returns its exit status, or 124 if
# it is still running after SECONDS (default 30).
wait_exit() {
  local pid=$1 seconds=${2:-30}
  local deadline=$(( $(now_ms) + seconds * 1000 ))
  while process_alive "$pid"; do
    [ "$(now_ms)" -gt "$deadline" ] && return 124
    sleep 0.05
  done
  wait "$pid" 2>/dev/null
}

# stop_nimbus [PID] [SECONDS]: SIGTERM, wait up to SECONDS (default 30), return the exit status
# (124 and SIGKILL when it does not stop in time).
stop_nimbus() {
  local pid=${1:-$NIMBUS_PID} seconds=${2:-30}
  kill -TERM "$pid" 2>/dev/null
  wait_exit "$pid" "$seconds"
  local status=$?
  if [ "$status" -eq 124 ]; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    printf 'nimbus pid %s did not exit within %ss of SIGTERM; killed\n' "$pid" "$seconds" >&2
  fi
  return "$status"
}

# cluster_directory DATA_DIR: where an embedded cluster of DATA_DIR lives.
cluster_directory() {
  if [ -f "$1/postgres-location" ]; then
    printf '%s/postgres\n' "$(cat "$1/postgres-location")"
  else
    printf '%s/postgres\n' "$1"
  fi
}

# socket_directory DATA_DIR: the Unix socket directory of DATA_DIR's embedded cluster.
socket_directory() {
  local cluster
  cluster=$(cluster_directory "$1")
  printf '%s/run\n' "${cluster%/postgres}"
}

# run_as_owner PATH COMMAND...: runs COMMAND as the owner of PATH when root (PostgreSQL's rule);
# pg_stop DATA MODE SECONDS: stops a cluster. Both from Tests/test-postgres.sh.
source "$REPO_DIR/Tests/test-postgres.sh"

# postmaster_pid DATA_DIR: pid of the embedded cluster's postmaster, empty when not running.
postmaster_pid() {
  local pidfile
  pidfile="$(cluster_directory "$1")/postmaster.pid"
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(head -n 1 "$pidfile" 2>/dev/null)
  if [ -n "$pid" ] && process_alive "$pid"; then echo "$pid"; fi
}

# children_of PID: the running child processes of PID, one per line.
children_of() {
  local stat pid ppid rest
  for stat in /proc/[0-9]*/stat; do
    { read -r pid _ _ ppid rest <"$stat"; } 2>/dev/null || continue
    [ "$ppid" = "$1" ] && process_alive "$pid" && echo "$pid"
  done
  return 0
}

# postgres_processes_of PID: PID and its children, those still running.
postgres_processes_of() {
  process_alive "$1" && echo "$1"
  children_of "$1"
}

# MARK: - Cleanup

cleanup() {
  local status=$?
  set +e
  if [ -s "$TEST_TMP/.failures" ]; then
    printf 'FAIL: %s\n' "$(wc -l <"$TEST_TMP/.failures") expectation(s) failed:" >&2
    sed 's/^/  - /' "$TEST_TMP/.failures" >&2
    [ "$status" -eq 0 ] && status=1
  fi
  local pid
  while read -r pid; do
    [ -n "$pid" ] || continue
    if process_alive "$pid"; then
      kill -TERM "$pid" 2>/dev/null
      wait_exit "$pid" 15 >/dev/null 2>&1
      if process_alive "$pid"; then kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
    fi
  done <"$TEST_TMP/.pids"
  local dir cluster
  while read -r dir; do
    [ -n "$dir" ] && [ -d "$dir" ] || continue
    cluster=$(cluster_directory "$dir")
    PG_BIN=${NIMBUS_TEST_PG_BIN:-} pg_stop "$cluster" immediate 20 >/dev/null 2>&1
    [ -f "$dir/postgres-location" ] && rm -rf "$(cat "$dir/postgres-location")"
  done <"$TEST_TMP/.data-dirs"
  local name
  while read -r name; do
    [ -n "$name" ] || continue
    psql_admin "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" >/dev/null 2>&1
  done <"$TEST_TMP/.databases"
  if [ "$status" -ne 0 ] && [ -n "${NIMBUS_IT_ARTIFACTS:-}" ]; then
    mkdir -p "$NIMBUS_IT_ARTIFACTS"
    local log
    while read -r log; do
      [ -f "$log" ] && cp "$log" "$NIMBUS_IT_ARTIFACTS/"
    done <"$TEST_TMP/.logs"
  fi
  rm -rf "$TEST_TMP"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# MARK: - HTTP with curl

# request METHOD PATH [CURL ARGS...]: one request to NIMBUS_URL. Sets HTTP_STATUS, HTTP_BODY,
# HTTP_HEADERS (header section, CR removed). The body is also in $TEST_TMP/last-body.
request() {
  local method=$1 path=$2; shift 2
  local method_args=(-X "$method")
  [ "$method" = HEAD ] && method_args=(--head)
  HTTP_STATUS=$(curl -sS --max-time 20 "${method_args[@]}" -o "$TEST_TMP/last-body" -D "$TEST_TMP/last-headers" \
    -w '%{http_code}' "$@" "$NIMBUS_URL$path") || fail "curl $method $path failed (status ${HTTP_STATUS:-none})"
  HTTP_BODY=$(cat "$TEST_TMP/last-body")
  HTTP_HEADERS=$(tr -d '\r' <"$TEST_TMP/last-headers")
}

# expect_status CODE [WHAT]: the last request's status.
expect_status() {
  [ "$HTTP_STATUS" = "$1" ] || fail "${2:-request}: expected status $1, got $HTTP_STATUS; body: ${HTTP_BODY:0:300}"
}

# header_value NAME [HEADERS]: the value of the first header NAME (case-insensitive), else empty.
header_value() {
  printf '%s\n' "${2-$HTTP_HEADERS}" | tr -d '\r' | grep -i -m1 "^$1:" | sed -E 's/^[^:]*:[ \t]*//; s/[ \t]*$//'
}

# expect_header NAME [EXPECTED]: the last response has header NAME (with exactly EXPECTED).
expect_header() {
  # A here-string, not `printf | grep -q`: grep may exit at its match while printf still writes
  # the newline, and under pipefail printf's SIGPIPE fails the check (seen once in CI).
  grep -qi "^$1:" <<<"$HTTP_HEADERS" || fail "expected a $1 header; headers: $HTTP_HEADERS"
  if [ $# -ge 2 ]; then
    local value
    value=$(header_value "$1")
    [ "$value" = "$2" ] || fail "expected header $1: $2, got '$value'"
  fi
}

# json_field NAME [JSON]: the first value of "NAME" in document order (strings unquoted, numbers as
# written, objects and arrays as compact JSON), or empty and status 1 when absent or not JSON.
# JSON defaults to the last body. Every JSON read here goes through one real parser, Tests/read-json.py.
json_field() {
  json_read first "$1" <<<"${2-$HTTP_BODY}"
}

# json_read COMMAND ARGS...: Tests/read-json.py over stdin; status 1 when absent, 2 (with the reason on
# stderr) when the input is not JSON.
json_read() {
  python3 -I -S "$REPO_DIR/Tests/read-json.py" "$@"   # (-S: no site-packages, a third of the start-up)
}

# expect_json_field NAME EXPECTED [JSON]: field NAME equals EXPECTED (strings compared unquoted).
expect_json_field() {
  local json=${3-$HTTP_BODY} value
  value=$(json_field "$1" "$json") || fail "expected JSON field \"$1\" in ${json:0:400}"
  [ "$value" = "$2" ] || fail "expected \"$1\" = $2, got $value in ${json:0:400}"
}

# expect_error_body STATUS_CODE_NAME [JSON]: the API error shape with that serverErrorCode.
expect_error_body() {
  local json=${2-$HTTP_BODY}
  expect_json_field serverErrorCode "$1" "$json"
  local uuid reason
  uuid=$(json_field uuid "$json") || fail "error body without uuid: $json"
  [[ $uuid =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] || fail "uuid '$uuid' is not a UUID in $json"
  reason=$(json_field reason "$json") || fail "error body without reason: $json"
  [ ${#reason} -ge 5 ] || fail "error reason '$reason' is not a sentence in $json"
}

# MARK: - Raw sockets

# raw_open [PORT]: opens a TCP connection to the server; sets RAW_FD and clears the capture.
raw_open() {
  exec {RAW_FD}<>"/dev/tcp/127.0.0.1/${1:-$NIMBUS_PORT}" || fail "cannot connect to 127.0.0.1:${1:-$NIMBUS_PORT}"
  RAW_OUT="$TEST_TMP/raw-$RAW_FD"
  : >"$RAW_OUT"
  RAW_RESPONSE="" RAW_CLOSED=0
}

# raw_send BYTES: sends BYTES as they are (write CR LF with $'\r\n'). A peer that has closed is
# not fatal (the write happens in a subshell, so SIGPIPE cannot end the scenario).
raw_send() {
  ( printf '%s' "$1" >&"$RAW_FD" ) 2>/dev/null
  return 0
}

# raw_read SECONDS: reads until the server closes the connection or SECONDS pass, appending to
# the capture. Sets RAW_RESPONSE (CRs kept), RAW_CLOSED=1 if the server closed, RAW_ELAPSED_MS.
raw_read() {
  local start status
  start=$(now_ms)
  timeout "$1" cat <&"$RAW_FD" >>"$RAW_OUT" 2>/dev/null
  status=$?
  RAW_ELAPSED_MS=$(( $(now_ms) - start ))
  RAW_CLOSED=0
  [ "$status" -eq 0 ] && RAW_CLOSED=1
  # An error such as ECONNRESET also ends the connection.
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] && RAW_CLOSED=1
  # The sentinel keeps trailing newlines that $(...) would strip.
  RAW_RESPONSE=$(cat "$RAW_OUT"; printf x)
  RAW_RESPONSE=${RAW_RESPONSE%x}
}

# raw_close: closes our end.
raw_close() { exec {RAW_FD}>&-; }

# raw_request BYTES [SECONDS]: one connection: send BYTES, read until closed or SECONDS (default 3).
raw_request() {
  raw_open
  raw_send "$1"
  raw_read "${2:-3}"
  raw_close
}

# raw_statuses [RESPONSE]: the status codes of every response in the capture, space-separated.
raw_statuses() {
  printf '%s' "${1-$RAW_RESPONSE}" | grep -a -o 'HTTP/1\.[01] [0-9][0-9][0-9] ' | sed -E 's/^HTTP\/1\.[01] ([0-9]+) $/\1/' | tr '\n' ' ' | sed 's/ $//'
}

# parse_responses METHOD...: splits the capture into consecutive responses, one per METHOD (a HEAD
# answer has no body; interim 1xx answers are kept as entries of their own). Sets RESP_STATUS,
# RESP_HEADERS and RESP_BODY arrays; fails on a missing or truncated answer or extra bytes.
parse_responses() {
  local rest=$RAW_RESPONSE method head status length
  RESP_STATUS=() RESP_HEADERS=() RESP_BODY=()
  for method in "$@"; do
    while :; do
      [[ $rest == *$'\r\n\r\n'* ]] || fail "no complete answer for request $(( ${#RESP_STATUS[@]} + 1 )) ($method); left: '${rest:0:300}'"
      head=${rest%%$'\r\n\r\n'*}
      rest=${rest#*$'\r\n\r\n'}
      [[ $head =~ ^HTTP/1\.[01]\ ([0-9]{3}) ]] || fail "not a status line: '${head:0:200}'"
      status=${BASH_REMATCH[1]}
      RESP_STATUS+=("$status")
      RESP_HEADERS+=("${head//$'\r'/}")
      if [[ $status == 1* ]]; then RESP_BODY+=(""); continue; fi
      length=$(header_value Content-Length "$head")
      [ -n "$length" ] || fail "answer $status to $method has no Content-Length"
      [ "$method" = HEAD ] && length=0
      [ "${#rest}" -ge "$length" ] || fail "answer $status to $method is truncated: ${#rest} of $length body bytes"
      RESP_BODY+=("${rest:0:length}")
      rest=${rest:length}
      break
    done
  done
  [ -z "$rest" ] || fail "extra bytes after ${#RESP_STATUS[@]} answers: '${rest:0:300}'"
}

# raw_body [RESPONSE]: the body of the (single) response in the capture.
raw_body() {
  printf '%s' "${1-$RAW_RESPONSE}" | sed '1,/^\r*$/d'
}

# expect_raw_error STATUS CODE [WHAT]: the raw answer is one STATUS response with the JSON error
# shape (code CODE), a Date header, Connection: close, and the server closed the connection.
expect_raw_error() {
  local what=${3:-raw request}
  local statuses
  statuses=$(raw_statuses)
  [ "$statuses" = "$1" ] || fail "$what: expected one $1 answer, got '${statuses}': ${RAW_RESPONSE:0:400}"
  local headers
  headers=$(printf '%s' "$RAW_RESPONSE" | sed '/^\r*$/q' | tr -d '\r')
  grep -qi '^Content-Type: application/json' <<<"$headers" || fail "$what: answer is not JSON: ${RAW_RESPONSE:0:400}"
  grep -qi '^Date: ' <<<"$headers" || fail "$what: answer has no Date header"
  grep -qi '^Connection: close' <<<"$headers" || fail "$what: answer lacks Connection: close"
  expect_error_body "$2" "$(raw_body)"
  [ "$RAW_CLOSED" = 1 ] || fail "$what: the server kept the connection open after a $1"
}

# repeat_char CHAR COUNT: COUNT copies of CHAR.
repeat_char() {
  local s
  printf -v s '%*s' "$2" ''
  printf '%s' "${s// /$1}"
}

# MARK: - Record store API (scenarios 30–36)
# Database routes with bearer tokens, the admin CLI beside a running server, and record lists out
# of compact JSON. Record objects are written by the server with their keys in this order:
# recordName, recordType, recordChangeTag, fields, created, modified, deleted, zoneID (a tombstone
# in a change feed: recordName, recordType, deleted); error items: recordName, uuid,
# serverErrorCode, reason, serverRecord?. The helpers below rely on that order.

# The database of the server started by start_store_server, and the address of `api` requests.
NIMBUS_DB_URL=""
API_CONTAINER=iCloud.com.mirxa.AppLocker
API_ENV=development

# start_store_server [ARGS...]: a fresh database and a server on it; sets NIMBUS_DB_URL.
start_store_server() {
  NIMBUS_DB_URL=$(fresh_database) || exit 1
  start_nimbus --database-url "$NIMBUS_DB_URL" "$@"
}

# nimbus_admin ARGS...: an admin command against NIMBUS_DB_URL (beside the running server). Prints
# its standard output; fails the scenario when it fails.
nimbus_admin() {
  local output status
  output=$("$NIMBUS_BIN" "$@" --database-url "$NIMBUS_DB_URL" 2>"$TEST_TMP/admin-stderr")
  status=$?
  [ "$status" -eq 0 ] || fail "nimbus $* exited with $status: $output $(cat "$TEST_TMP/admin-stderr")"
  printf '%s\n' "$output"
}

# issue_token VAR USER DEVICE: issues a device token; sets VAR to the secret and VAR_ID to its id.
issue_token() {
  local output id secret
  output=$(nimbus_admin token issue "$2" --device "$3") || exit 1
  id=$(printf '%s\n' "$output" | sed -n 's/^token-id: //p')
  secret=$(printf '%s\n' "$output" | sed -n 's/^token: //p')
  [ -n "$id" ] && [ -n "$secret" ] || fail "token issue printed no token-id/token lines: $output"
  printf -v "$1" '%s' "$secret"
  printf -v "${1}_ID" '%s' "$id"
}

# api_path OP: the path of a private-database operation of API_CONTAINER in API_ENV.
api_path() { printf '/database/1/%s/%s/private/%s' "$API_CONTAINER" "$API_ENV" "$1"; }

# api TOKEN OP [BODY]: one database request (GET for zones/list and users/current, else POST of
# BODY; `@file` sends a file). Sets HTTP_STATUS, HTTP_BODY, HTTP_HEADERS like `request`.
api() {
  local token=$1 op=$2 body=${3-}
  case $op in
    zones/list|users/current) request GET "$(api_path "$op")" -H "Authorization: Bearer $token" ;;
    *) request POST "$(api_path "$op")" -H "Authorization: Bearer $token" \
         -H 'Content-Type: application/json' --data-binary "$body" ;;
  esac
}

# api_ok TOKEN OP [BODY]: `api`, and the answer must be 200.
api_ok() {
  api "$@"
  expect_status 200 "$2"
}

# api_call TOKEN OP BODY: a POST for background loops, which must not share `request`'s files:
# prints the body, a space and the HTTP status on one line (status 000 when curl failed).
api_call() {
  curl -s --max-time 20 -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    --data-binary "$3" -w ' %{http_code}' "$NIMBUS_URL$(api_path "$2")"
}

# expect_api_error STATUS CODE [WHAT]: the last answer is a request-level error in the API shape.
expect_api_error() {
  expect_status "$1" "${3:-request}"
  expect_error_body "$2"
}

# record_items [JSON]: the record items of an answer (records, tombstones, error items: the objects
# in its lists whose first key is recordName or uuid), one compact line each, in answer order.
record_items() {
  json_read record-items <<<"${1-$HTTP_BODY}"
}

# item_codes [JSON]: each record item's serverErrorCode, or `ok` for a record or deletion, one
# per line in answer order.
item_codes() {
  json_read item-codes <<<"${1-$HTTP_BODY}"
}

# expect_item_codes EXPECTED [WHAT] [JSON]: item_codes joined by spaces equal EXPECTED.
expect_item_codes() {
  local got
  got=$(item_codes "${3-$HTTP_BODY}" | tr '\n' ' ' | sed 's/ $//')
  [ "$got" = "$1" ] || fail "${2:-records}: expected items '$1', got '$got' in ${HTTP_BODY:0:600}"
}

# record_summary [JSON]: `NAME TAG` for each live record and `NAME -` for each tombstone, in order
# (records of an answer; a CONFLICT item's serverRecord counts as a record).
record_summary() {
  json_read record-summary <<<"${1-$HTTP_BODY}"
}

# record_tag NAME [JSON]: the recordChangeTag of record NAME in an answer, empty when absent.
record_tag() {
  record_summary "${2-$HTTP_BODY}" | sed -n "s/^$1 \([^ -][^ ]*\)\$/\1/p" | sed -n 1p
}

# field_value NAME FIELD [JSON]: the value of FIELD of record NAME as raw JSON (strings quoted).
field_value() {
  json_read field-value "$1" "$2" <<<"${3-$HTTP_BODY}"
}

# contains TEXT GREP-ARGS...: grep over TEXT from a here-string (see field_value on pipes).
contains() {
  local text=$1
  shift
  grep "$@" <<<"$text"
}

# tag_number TAG: a recordChangeTag (base 36 of the zone sequence) as a decimal number.
tag_number() { echo $((36#$1)); }

# expect_no_server_errors: the server answered no 5xx (its /metrics counters) and logged no
# internal error (NIMBUS_LOG).
expect_no_server_errors() {
  local metrics logged
  metrics=$(curl -s --max-time 10 "$NIMBUS_URL/metrics") || fail "GET /metrics failed"
  # Here-strings, not pipes: grep -q exits at its first match, and a writer still writing a long
  # /metrics text into the pipe dies of SIGPIPE, which pipefail turned into "no request counters".
  contains "$metrics" -q '^nimbus_http_requests_total' || fail "/metrics has no request counters"
  if contains "$metrics" -q '^nimbus_http_requests_total{.*status="5[0-9][0-9]"}'; then
    fail "the server answered 5xx: $(printf '%s\n' "$metrics" | grep '^nimbus_http_requests_total{.*status="5' | tr '\n' ' ')"
  fi
  logged=$(grep -a -i 'internal error\|INTERNAL_ERROR' "$NIMBUS_LOG" | head -n 3)
  [ -z "$logged" ] || fail "the server logged internal errors: $logged"
  ok "no 5xx answers and no internal errors in the log"
}

# defer_fail MESSAGE: a failed check that should not hide the checks after it (a known server
# bug); the scenario still fails at finish_scenario.
DEFERRED_FAILURES=0
defer_fail() {
  printf 'FAIL (deferred): %s\n' "$*" >&2
  DEFERRED_FAILURES=$((DEFERRED_FAILURES + 1))
}

# finish_scenario: fails the scenario if any check was deferred.
finish_scenario() {
  [ "$DEFERRED_FAILURES" -eq 0 ] || fail "$DEFERRED_FAILURES deferred check(s) failed (see FAIL (deferred) above)"
}

# json_last_field NAME [JSON]: like json_field, but the last occurrence (the top-level syncToken
# of zones/changes comes after the zones' own tokens).
json_last_field() {
  json_read last "$1" <<<"${2-$HTTP_BODY}"
}

# MARK: - Long-poll (scenarios 41–44, 49)
# Waiting requests run in the background (one curl each, or many per curl with --parallel), are
# timed with bash's clock (no fork), and the server's /metrics gauges are polled. Everything
# started here is registered with track_pid.

declare -A LP_PIDS=()

# now_us: wall clock in microseconds.
now_us() { echo "${EPOCHREALTIME/./}"; }

# metric NAME [BASE_URL]: the value of the unlabelled /metrics sample NAME (empty when absent).
metric() {
  curl -s --max-time 5 "${2:-$NIMBUS_URL}/metrics" | awk -v n="$1" '$1 == n {print $2; exit}'
}

# wait_metric NAME VALUE SECONDS [BASE_URL]: polls /metrics every 20 ms until NAME equals VALUE;
# status 1 when it does not within SECONDS. LP_METRIC is the last value seen, LP_METRIC_MS the
# time it took.
wait_metric() {
  local name=$1 want=$2 seconds=$3 base=${4:-$NIMBUS_URL} start
  start=$(now_ms)
  local deadline=$(( start + $(awk -v s="$seconds" 'BEGIN {printf "%d", s * 1000}') ))
  while :; do
    LP_METRIC=$(metric "$name" "$base")
    LP_METRIC_MS=$(( $(now_ms) - start ))
    [ "$LP_METRIC" = "$want" ] && return 0
    [ "$(now_ms)" -ge "$deadline" ] && return 1
    sleep 0.02
  done
}

# _lp_spawn NAME CURL_ARGS...: one curl in the background; its answer and times go to
# $TEST_TMP/lp-NAME/{status,headers,body,stderr,start,done} (times in µs since the epoch).
_lp_spawn() {
  local name=$1; shift
  local dir=$TEST_TMP/lp-$name
  mkdir -p "$dir"
  rm -f "$dir"/*
  (
    trap 'kill "$c" 2>/dev/null; exit 143' TERM
    echo "${EPOCHREALTIME/./}" >"$dir/start"
    curl -sS -N --max-time 70 -o "$dir/body" -D "$dir/headers" -w '%{http_code} %{time_starttransfer}' "$@" \
      >"$dir/status" 2>"$dir/stderr" &
    c=$!
    wait "$c"
    echo "${EPOCHREALTIME/./}" >"$dir/done"
  ) &
  LP_PIDS[$name]=$!
  track_pid "$!"
}

# lp_start NAME TOKEN OP BODY [BASE_URL]: a (waiting) database POST of OP in the background.
lp_start() {
  _lp_spawn "$1" -X POST -H "Authorization: Bearer $2" -H 'Content-Type: application/json' --data-binary "$4" \
    "${5:-$NIMBUS_URL}$(api_path "$3")"
}

# lp_get NAME TOKEN URL: a (waiting) GET in the background, e.g. a webcourier poll.
lp_get() {
  _lp_spawn "$1" -H "Authorization: Bearer $2" "$3"
}

# lp_running NAME: true while the background request NAME has no complete answer.
lp_running() { process_alive "${LP_PIDS[$1]}"; }

# lp_finish NAME [SECONDS]: waits (default 70 s) for the background request NAME. Sets LP_STATUS,
# LP_BODY, LP_HEADERS, LP_START_US, LP_DONE_US, LP_ELAPSED_MS and LP_FIRST_BYTE_S (curl's
# time_starttransfer: when the headers arrived). Fails the scenario when it does not end in time.
lp_finish() {
  local name=$1 seconds=${2:-70} dir=$TEST_TMP/lp-$1 pid=${LP_PIDS[$1]}
  wait_exit "$pid" "$seconds"
  [ $? -eq 124 ] && fail "waiting request $name is still unanswered after ${seconds}s"
  LP_STATUS=$(cut -d' ' -f1 "$dir/status" 2>/dev/null)
  LP_FIRST_BYTE_S=$(cut -d' ' -f2 "$dir/status" 2>/dev/null)
  LP_BODY=$(cat "$dir/body" 2>/dev/null)
  LP_HEADERS=$(tr -d '\r' <"$dir/headers" 2>/dev/null)
  LP_START_US=$(cat "$dir/start" 2>/dev/null)
  LP_DONE_US=$(cat "$dir/done" 2>/dev/null)
  LP_ELAPSED_MS=$(( (${LP_DONE_US:-0} - ${LP_START_US:-0}) / 1000 ))
  [ -n "$LP_STATUS" ] || LP_STATUS=000
}

# lp_kill NAME: ends the background request NAME (the client goes away).
lp_kill() {
  local pid=${LP_PIDS[$1]}
  process_alive "$pid" && kill -TERM "$pid" 2>/dev/null
  wait_exit "$pid" 5 >/dev/null
}

# lp_batch NAME CONCURRENCY: runs the requests listed in $TEST_TMP/NAME.list, one per line
# `METHOD URL TOKEN BODY` (BODY: JSON without spaces, or `-` for none), with curl --parallel in
# the background: ceil(CONCURRENCY/250) curl processes, CONCURRENCY transfers at a time in all.
# Answer i (line i) goes to $TEST_TMP/NAME/i.out, and a line `i STATUS` to $TEST_TMP/NAME.status.
# Sets LP_BATCH_PIDS (also registered with track_pid).
lp_batch() {
  local name=$1 concurrency=$2 list=$TEST_TMP/$1.list dir=$TEST_TMP/$1
  local total processes per_process i=0 method url token body p
  total=$(wc -l <"$list")
  processes=$(( (concurrency + 249) / 250 ))
  [ "$processes" -gt "$total" ] && processes=$total
  [ "$processes" -lt 1 ] && processes=1
  per_process=$(( (concurrency + processes - 1) / processes ))
  rm -rf "$dir" "$TEST_TMP/$name".cfg.* "$TEST_TMP/$name".status.*
  mkdir -p "$dir"
  while read -r method url token body; do
    i=$((i + 1))
    p=$(( (i - 1) * processes / total ))
    {
      # `next` separates requests; one after the last would start an empty one.
      [ -s "$TEST_TMP/$name.cfg.$p" ] && printf 'next\n'
      printf 'url = "%s"\nrequest = "%s"\nmax-time = 70\n' "$url" "$method"
      printf 'header = "Authorization: Bearer %s"\n' "$token"
      if [ "$body" != - ]; then
        printf 'header = "Content-Type: application/json"\n'
        printf 'data-binary = "%s"\n' "$(printf '%s' "$body" | sed 's/\\/\\\\/g; s/"/\\"/g')"
      fi
      printf 'output = "%s/%d.out"\nwrite-out = "%d %%{http_code}\\n"\n' "$dir" "$i" "$i"
    } >>"$TEST_TMP/$name.cfg.$p"
  done <"$list"
  LP_BATCH_PIDS=()
  for ((p = 0; p < processes; p++)); do
    [ -f "$TEST_TMP/$name.cfg.$p" ] || continue
    curl -s -Z --parallel-immediate --parallel-max "$per_process" -K "$TEST_TMP/$name.cfg.$p" \
      >"$TEST_TMP/$name.status.$p" 2>"$TEST_TMP/$name.stderr.$p" &
    LP_BATCH_PIDS+=("$!")
    track_pid "$!"
  done
}

# lp_batch_wait NAME SECONDS: waits for lp_batch's curl processes; status 124 when one still runs
# after SECONDS. Then $TEST_TMP/NAME.status has every `i STATUS` line, sorted by i.
lp_batch_wait() {
  local name=$1 seconds=$2 pid deadline
  deadline=$(( $(now_ms) + seconds * 1000 ))
  for pid in "${LP_BATCH_PIDS[@]}"; do
    while process_alive "$pid"; do
      [ "$(now_ms)" -gt "$deadline" ] && return 124
      sleep 0.02
    done
    wait "$pid" 2>/dev/null
  done
  cat "$TEST_TMP/$name".status.* 2>/dev/null | sort -n >"$TEST_TMP/$name.status"
  return 0
}

# lp_batch_kill: ends lp_batch's curl processes (their clients go away).
lp_batch_kill() {
  local pid
  for pid in "${LP_BATCH_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${LP_BATCH_PIDS[@]}"; do wait_exit "$pid" 5 >/dev/null; done
}

# notification_lines [JSON]: one line per notification of a webcourier answer:
# `subscriptionID notificationType reason recordName recordType zoneName`.
notification_lines() {
  json_read rows notificationID subscriptionID notificationType reason recordName recordType zoneName <<<"${1-$HTTP_BODY}"
}

# MARK: - Retention (scenario 60)
# `nimbus prune` beside a running server, its report lines, and expired rows loaded with SQL.

# psql_db SQL...: runs SQL on the database of start_store_server (NIMBUS_DB_URL), unaligned output.
psql_db() {
  "$NIMBUS_TEST_PG_BIN/psql" "$NIMBUS_DB_URL" -X -q -At -v ON_ERROR_STOP=1 -c "$*"
}

# run_prune ARGS...: `nimbus prune ARGS` against NIMBUS_DB_URL, whatever its outcome. Sets
# PRUNE_OUT (stdout), PRUNE_ERR (stderr) and PRUNE_STATUS.
run_prune() {
  PRUNE_OUT=$("$NIMBUS_BIN" prune "$@" --database-url "$NIMBUS_DB_URL" 2>"$TEST_TMP/prune-stderr")
  PRUNE_STATUS=$?
  PRUNE_ERR=$(cat "$TEST_TMP/prune-stderr")
}

# prune_line CONTAINER USER ZONE TYPE [OUTPUT]: the report line of one container/user/zone/type
# (`C development user=U zone=Z type=T: deleted|would delete records=N tombstones=M`), or empty.
prune_line() {
  printf '%s\n' "${5-$PRUNE_OUT}" | grep -a "^$1 development user=$2 zone=$3 type=$4: " || true
}

# insert_expired_events ZONE COUNT TIMESTAMP_MS [PREFIX]: COUNT live BlockedAppEvent rows named
# PREFIX-NNNNNN (default bulk) in ZONE of NIMBUS_DB_URL, created 31 days ago and expired a day
# ago, written directly with SQL (the zone's sequence is advanced past them).
insert_expired_events() {
  local zone=$1 count=$2 timestamp=$3 prefix=${4:-bulk}
  psql_db "
    WITH z AS (UPDATE zones SET change_seq = change_seq + $count WHERE zone_name = '$zone' RETURNING id, change_seq)
    INSERT INTO records (zone_id, record_name, record_type, fields, change_seq, created_at, created_by_device,
                         created_by_user, modified_at, modified_by_device, modified_by_user, deleted, expires_at)
    SELECT z.id, '$prefix-' || lpad(g::text, 6, '0'), 'BlockedAppEvent',
           jsonb_build_object('timestamp', jsonb_build_object('type', 'TIMESTAMP', 'value', $timestamp::int8)),
           z.change_seq - $count + g, now() - interval '31 days', 'mac', '', now() - interval '31 days', 'mac', '',
           false, now() - interval '1 day'
    FROM z, generate_series(1, $count) g" >/dev/null
}

# MARK: - Assets (scenarios 50–54)
# Uploads, downloads and the asset tables. Checksums use coreutils only (sha256sum and base64;
# hex becomes binary through bash's printf), so xxd and openssl are not needed. Downloads go to
# files (assets are binary); HTTP_BODY then holds at most their first 4000 bytes, NULs removed.

# (SQL on the server's database: psql_db, in the Retention section above.)

# b64_sha256 FILE: the standard base64 SHA-256 of FILE's bytes (what fileChecksum must be).
b64_sha256() {
  local hex
  hex=$(sha256sum <"$1") || return 1
  hex=${hex:0:64}
  # shellcheck disable=SC2059 # the format is the digest as \xHH escapes
  printf "$(sed 's/../\\x&/g' <<<"$hex")" | base64 -w0
  echo
}

# random_file PATH BYTES: a file of BYTES random bytes.
random_file() {
  head -c "$2" /dev/urandom >"$1"
  [ "$(stat -c %s "$1")" = "$2" ] || fail "could not write $2 random bytes to $1"
}

# file_size FILE: its size in bytes.
file_size() { stat -c %s "$1"; }

# byte_slice FILE OFFSET LENGTH OUT: LENGTH bytes of FILE from OFFSET into OUT.
byte_slice() {
  dd if="$1" of="$4" bs=64K iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none \
    || fail "dd of $1 at $2 for $3 bytes failed"
}

# expect_same_file EXPECTED ACTUAL WHAT: byte-identical files.
expect_same_file() {
  cmp -s "$1" "$2" || fail "$3: the bytes differ ($(file_size "$1") expected, $(file_size "$2") received; $(cmp "$1" "$2" 2>&1 | head -n 1))"
}

# _asset_curl OUTFILE CURL ARGS...: one curl call; sets HTTP_STATUS, HTTP_HEADERS and HTTP_BODY
# (the first 4000 bytes of OUTFILE without NULs). ASSET_MAX_TIME (default 60) bounds it.
_asset_curl() {
  local out=$1; shift
  : >"$out"
  HTTP_STATUS=$(curl -sS --max-time "${ASSET_MAX_TIME:-60}" -o "$out" -D "$TEST_TMP/last-headers" -w '%{http_code}' "$@") \
    || fail "curl $* failed (status ${HTTP_STATUS:-none})"
  HTTP_HEADERS=$(tr -d '\r' <"$TEST_TMP/last-headers")
  HTTP_BODY=$(head -c 4000 "$out" | tr -d '\0')
}

# asset_upload_url TOKEN RECORD_TYPE FIELD [RECORD_NAME]: one upload URL from assets/upload
# (API_CONTAINER, API_ENV); sets ASSET_URL (checked to be an absolute URL of this server) and
# ASSET_URL_PATH (its path).
asset_upload_url() {
  local name=""
  [ -n "${4:-}" ] && name=",\"recordName\":\"$4\""
  api "$1" assets/upload "{\"tokens\":[{\"recordType\":\"$2\",\"fieldName\":\"$3\"$name}]}"
  expect_status 200 "assets/upload"
  ASSET_URL=$(json_field url) || fail "assets/upload answered no url: $HTTP_BODY"
  [[ $ASSET_URL == "$NIMBUS_URL"/assets/1/upload/?* ]] || fail "upload url '$ASSET_URL' is not an absolute URL of $NIMBUS_URL"
  ASSET_URL_PATH=${ASSET_URL#"$NIMBUS_URL"}
}

# asset_post TOKEN URL FILE [MODE [CURL ARGS...]]: POSTs FILE's bytes to the absolute URL, streamed
# by curl: MODE `length` (Content-Length, the default) or `chunked`. TOKEN `-` sends no
# Authorization. Sets HTTP_STATUS, HTTP_BODY, HTTP_HEADERS.
asset_post() {
  local token=$1 url=$2 file=$3 mode=${4:-length}
  shift $(( $# >= 4 ? 4 : 3 ))
  local args=(-X POST)
  [ "$token" = - ] || args+=(-H "Authorization: Bearer $token")
  case $mode in
    length) args+=(-T "$file") ;;
    # From standard input curl sends chunks (and a final empty chunk even for an empty file,
    # which `-T FILE -H 'Transfer-Encoding: chunked'` omits in curl 7.88).
    chunked) args+=(-T - -H 'Transfer-Encoding: chunked') ;;
    *) fail "asset_post: unknown mode $mode" ;;
  esac
  _asset_curl "$TEST_TMP/last-body" "${args[@]}" "$@" "$url" <"$file"
}

# parse_upload [JSON]: UP_CHECKSUM, UP_SIZE and UP_RECEIPT of a {"singleFile": ...} answer, and
# UP_FIELD, the ASSETID field value that saves it.
parse_upload() {
  local json=${1-$HTTP_BODY}
  [[ $json == '{"singleFile":{'* ]] || fail "upload answer is not {\"singleFile\": ...}: ${json:0:300}"
  UP_CHECKSUM=$(json_field fileChecksum "$json") || fail "upload answer without fileChecksum: $json"
  UP_SIZE=$(json_field size "$json") || fail "upload answer without size: $json"
  UP_RECEIPT=$(json_field receipt "$json") || fail "upload answer without receipt: $json"
  UP_FIELD=$(asset_field "$UP_CHECKSUM" "$UP_SIZE" "$UP_RECEIPT")
}

# upload_asset TOKEN FILE [MODE] [RECORD_TYPE FIELD]: a fresh upload URL (type Blob, field data by
# default) and FILE's bytes; the answer must be 200 with FILE's checksum and size. Sets ASSET_URL,
# UP_CHECKSUM, UP_SIZE, UP_RECEIPT, UP_FIELD.
upload_asset() {
  local token=$1 file=$2 mode=${3:-length} size
  asset_upload_url "$token" "${4:-Blob}" "${5:-data}"
  asset_post "$token" "$ASSET_URL" "$file" "$mode"
  size=$(file_size "$file")
  expect_status 200 "upload of $size bytes ($mode)"
  parse_upload
  [ "$UP_SIZE" = "$size" ] || fail "upload of $size bytes ($mode) answered size $UP_SIZE"
  local want
  want=$(b64_sha256 "$file")
  [ "$UP_CHECKSUM" = "$want" ] || fail "upload of $size bytes ($mode): fileChecksum $UP_CHECKSUM, sha256sum says $want"
}

# asset_field CHECKSUM SIZE RECEIPT: an ASSETID field value for a record.
asset_field() {
  printf '{"value":{"fileChecksum":"%s","size":%s,"receipt":"%s"},"type":"ASSETID"}' "$1" "$2" "$3"
}

# asset_member NAME FIELD MEMBER [JSON]: a member (fileChecksum, size, downloadURL) of the asset
# in field FIELD of record NAME in an answer; status 1 when absent.
asset_member() {
  local value
  value=$(json_read field-value "$1" "$2" <<<"${4-$HTTP_BODY}") || return 1
  json_field "$3" "$value"
}

# asset_get TOKEN URL OUTFILE [CURL ARGS...]: GET of an absolute URL (pass --head for HEAD), the
# body into OUTFILE. TOKEN `-` sends no Authorization.
asset_get() {
  local token=$1 url=$2 out=$3
  shift 3
  local args=()
  [ "$token" = - ] || args+=(-H "Authorization: Bearer $token")
  _asset_curl "$out" "${args[@]}" "$@" "$url"
}

# asset_counts: "ASSETS CHUNKS", every row of assets (complete or not) and of asset_chunks.
asset_counts() {
  psql_db "SELECT (SELECT count(*) FROM assets) || ' ' || (SELECT count(*) FROM asset_chunks)"
}

# expect_asset_counts "ASSETS CHUNKS" WHAT [SECONDS]: asset_counts is that now, or becomes it
# within SECONDS.
expect_asset_counts() {
  local deadline=$(( $(now_ms) + ${3:-0} * 1000 )) got
  while :; do
    got=$(asset_counts)
    [ "$got" = "$1" ] && return 0
    [ "$(now_ms)" -ge "$deadline" ] && fail "$2: expected assets/asset_chunks rows '$1', found '$got'"
    sleep 0.1
  done
}

# open_transactions: other sessions of NIMBUS_DB_URL's database inside a transaction (an upload
# streams inside one).
open_transactions() {
  psql_db "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
}

# wait_open_transactions N SECONDS: open_transactions reaches N; status 1 when it does not in time.
wait_open_transactions() {
  local deadline=$(( $(now_ms) + $2 * 1000 ))
  while :; do
    OPEN_TX=$(open_transactions)
    [ "$OPEN_TX" = "$1" ] && return 0
    [ "$(now_ms)" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}

# uploads_streaming: evidence of uploads whose bytes are arriving: sessions inside a transaction
# whose last statement wrote asset_chunks (an upload streaming in one transaction), plus chunk
# rows of incomplete assets (an upload committing chunk by chunk).
uploads_streaming() {
  psql_db "SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                     AND xact_start IS NOT NULL AND query LIKE '%asset_chunks%')
                + (SELECT count(*) FROM asset_chunks c JOIN assets a ON a.id = c.asset_id WHERE NOT a.complete)"
}

# wait_uploads_streaming N SECONDS: uploads_streaming reaches at least N; status 1 if not in time.
wait_uploads_streaming() {
  local deadline=$(( $(now_ms) + $2 * 1000 ))
  while :; do
    STREAMING=$(uploads_streaming)
    [ "$STREAMING" -ge "$1" ] && return 0
    [ "$(now_ms)" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}

# raw_upload_head TOKEN PATH FRAMING: opens a raw connection and sends an upload's head; FRAMING
# is a Content-Length value or `chunked`. The body follows with raw_send or `... >&"$RAW_FD"`.
raw_upload_head() {
  local framing="Content-Length: $3"
  [ "$3" = chunked ] && framing="Transfer-Encoding: chunked"
  raw_open
  raw_send "POST $2 HTTP/1.1"$'\r\n'"Host: 127.0.0.1"$'\r\n'"Authorization: Bearer $1"$'\r\n'"$framing"$'\r\n\r\n'
}

# healthy [WHAT]: GET /healthz answers 200 and the server process runs.
healthy() {
  process_alive "$NIMBUS_PID" || fail "${1:-server}: nimbus (pid $NIMBUS_PID) is gone"
  local code
  code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$NIMBUS_URL/healthz")
  [ "$code" = 200 ] || fail "${1:-server}: GET /healthz answered $code"
}
