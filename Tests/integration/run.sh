#!/usr/bin/env bash
# Runs every Tests/integration/scenarios/*.sh in order, each in its own bash process under a
# timeout, against the real `nimbus` binary. Prints PASS/FAIL per scenario (with the tail of its
# output and of its server logs on failure) and ends with "N passed, M failed", after the list of
# the steps skipped for not being root (Tests/tools.sh's root_only; none when run as root).
#
#   bash Tests/integration/run.sh [PATTERN...]   # only scenarios whose file name contains a PATTERN
#
# Environment: NIMBUS_BIN (default: the debug build), NIMBUS_TEST_DATABASE_URL, NIMBUS_TEST_PG_BIN,
# NIMBUS_TEST_PG_RUN_AS (exported by Tests/run.sh; during development /tmp/nimbus-dev-pg.env is
# read when they are missing), NIMBUS_IT_TIMEOUT (seconds per scenario, default 180),
# NIMBUS_SKIP_LOG (a file the skipped steps are also appended to, for Tests/run.sh's summary),
# TMPDIR (where the scenarios' scratch directories go; default /tmp).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$repo/Tests/tools.sh"

if [ -z "${NIMBUS_TEST_DATABASE_URL:-}" ] && [ -f /tmp/nimbus-dev-pg.env ]; then
  eval "$(cat /tmp/nimbus-dev-pg.env)"
fi
if [ -z "${NIMBUS_BIN:-}" ]; then
  NIMBUS_BIN="$(cd "$repo" && swift build --show-bin-path)/nimbus"
fi
export NIMBUS_BIN
[ -x "$NIMBUS_BIN" ] || { echo "integration: no nimbus binary at $NIMBUS_BIN (run swift build)" >&2; exit 1; }
[ -n "${NIMBUS_TEST_DATABASE_URL:-}" ] || { echo "integration: NIMBUS_TEST_DATABASE_URL is not set (run Tests/run.sh)" >&2; exit 1; }
for tool in curl timeout grep sed; do
  find_tool "$tool" >/dev/null || { echo "integration: $tool is required" >&2; exit 1; }
done

timeout_seconds=${NIMBUS_IT_TIMEOUT:-180}
artifacts=$(mktemp -d "${TMPDIR:-/tmp}/nimbus-it-run.XXXXXX")
trap 'rm -rf "$artifacts"' EXIT
# The scenarios' root_only lines land here (and in the caller's NIMBUS_SKIP_LOG, at the end).
outer_skip_log=${NIMBUS_SKIP_LOG:-}
export NIMBUS_SKIP_LOG="$artifacts/skipped"
: >"$NIMBUS_SKIP_LOG"

passed=0 failed=0 failed_names=()
suite_start=$(date +%s)
for scenario in "$here"/scenarios/*.sh; do
  name=$(basename "$scenario" .sh)
  if [ $# -gt 0 ]; then
    wanted=""
    for pattern in "$@"; do [[ $name == *"$pattern"* ]] && wanted=1; done
    [ -n "$wanted" ] || continue
  fi
  output="$artifacts/$name.out"
  started=$(date +%s)
  # On timeout, SIGTERM goes to the scenario's whole process group (servers included), so the
  # scenario's EXIT trap still cleans up; SIGKILL follows 20 s later.
  NIMBUS_IT_ARTIFACTS="$artifacts/$name" timeout -k 20 "$timeout_seconds" bash "$scenario" </dev/null >"$output" 2>&1
  status=$?
  took=$(( $(date +%s) - started ))
  if [ "$status" -eq 0 ]; then
    passed=$((passed + 1))
    echo "PASS $name (${took}s)"
  else
    failed=$((failed + 1))
    failed_names+=("$name")
    reason="exit $status"
    [ "$status" -eq 124 ] && reason="timed out after ${timeout_seconds}s"
    echo "FAIL $name ($reason, ${took}s)"
    echo "---- last lines of $name's output"
    tail -n 40 "$output" | sed 's/^/    /'
    for log in "$artifacts/$name"/*.log; do
      [ -f "$log" ] || continue
      echo "---- last lines of $(basename "$log") (server log)"
      tail -n 20 "$log" | sed 's/^/    /'
    done
    echo "----"
  fi
done

report_skips "$NIMBUS_SKIP_LOG"
[ -z "$outer_skip_log" ] || cat "$NIMBUS_SKIP_LOG" >>"$outer_skip_log"
echo "integration: $(( $(date +%s) - suite_start ))s${failed_names[*]:+; failed: ${failed_names[*]}}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
