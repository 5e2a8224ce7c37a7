#!/usr/bin/env bash
# No-missed-change soak: Tests/integration/soak/no-missed-change.sh (8 concurrent writers into one
# zone, 4 readers following records/changes with tokens; every committed record seen exactly once
# in its final state, no token going backwards) against the real binary, for much longer than the
# in-process test of the same rule (Tests/NimbusAPITests/NoMissedChangeTests.swift) runs.
#
#   bash bench/no-missed-change.sh
#
# Uses Tests/integration/soak/no-missed-change.sh and the duration knob it reads
# (an environment variable whose name contains SECONDS or DURATION, found in the scenario's
# source). When the scenario is absent, or has no such knob, it says so and exits 0 without
# running anything. The scenario gets a scratch PostgreSQL cluster (Tests/test-postgres.sh) and
# the release build of nimbus (built here unless BENCH_SKIP_BUILD=1; NIMBUS_BIN overrides).
#
# Knobs (environment): BENCH_SOAK_SECONDS=300 BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1 NIMBUS_BIN= (or
#   BENCH_NIMBUS_BIN=)
# --smoke (or BENCH_SMOKE=1): tiny sizes (BENCH_SOAK_SECONDS=5), the binary of BENCH_NIMBUS_BIN, the whole
#   run bounded to 90 s; exits non-zero when the pipeline did not work; figures printed, not judged
#   (bench/smoke.sh runs every bench so in Tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=no-missed-change
source bench/lib.sh  # say, smoke_mode, ...
smoke_mode 90 BENCH_SOAK_SECONDS=5 -- "$@"
ROOT=$PWD
SOAK_SECONDS=${BENCH_SOAK_SECONDS:-300}
NIMBUS_BIN=${NIMBUS_BIN:-${BENCH_NIMBUS_BIN:-}}

scenario=""
for f in Tests/integration/soak/no-missed-change.sh; do [ -f "$f" ] && scenario=$f; done
if [ -z "$scenario" ]; then
  say "skipped: Tests/integration/soak/no-missed-change.sh does not exist"
  [ -z "$SMOKE" ] || die "smoke mode: no scenario to run"
  exit 0
fi
# The scenario's duration knob: ${NAME:-default} or ${NAME-default} with SECONDS or DURATION in NAME.
knob=$(grep -oE '\$\{[A-Z][A-Z0-9_]*(SECONDS|DURATION)[A-Z0-9_]*:?-' "$scenario" | head -1 | sed -E 's/^\$\{//; s/:?-$//' || true)
if [ -z "$knob" ]; then
  say "skipped: $scenario has no duration knob (no \${..._SECONDS:-…} or \${..._DURATION:-…} variable);" \
      "add one to the scenario to soak it for longer"
  [ -z "$SMOKE" ] || die "smoke mode: no duration knob"
  exit 0
fi
default=$(grep -oE "\\\$\\{$knob:?-[^}]*\\}" "$scenario" | head -1 | sed -E "s/^\\\$\\{$knob:?-//; s/\\}$//")
value=$SOAK_SECONDS
# A DURATION knob may expect a unit (e.g. 30s): follow the default's form.
case $default in *[0-9]s) value=${SOAK_SECONDS}s ;; *[0-9]m) value=${SOAK_SECONDS}s ;; esac

[ -n "${BENCH_SKIP_INSTALL:-}" ] || bash deploy/install-deps.sh
if [ -z "${NIMBUS_BIN:-}" ]; then
  if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
    say "building nimbus (release)"
    swift build -c release --product nimbus >&2
  fi
  NIMBUS_BIN="$(swift build -c release --show-bin-path)/nimbus"
fi
[ -x "$NIMBUS_BIN" ] || { say "FAILED: no nimbus binary at $NIMBUS_BIN"; exit 1; }
export NIMBUS_BIN

start_test_postgres "$(mktemp -d /tmp/nimbus-soak.XXXXXX)"
trap stop_test_postgres EXIT
trap 'exit 130' INT TERM

say "running $scenario with $knob=$value (scenario default: ${default:-?}), binary $NIMBUS_BIN, load average $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
status=0
env "$knob=$value" bash "$scenario" || status=$?
secs=$(( $(date +%s) - t0 ))
echo
echo "================ no-missed-change soak ================"
echo "scenario: $scenario, $knob=$value (default ${default:-?}); binary: $NIMBUS_BIN"
echo "result: $([ "$status" -eq 0 ] && echo PASSED || echo "FAILED (exit $status)") after ${secs}s;" \
     "load average at the end $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "======================================================="
exit "$status"
