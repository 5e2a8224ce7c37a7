#!/usr/bin/env bash
# The no-missed-change checker for longer (docs/checker.md): scenario 90 with NMC_SECONDS of writes
# (default 600) against the release build, on a scratch PostgreSQL cluster of its own, then the
# negative control (NegativeControl/build.sh, which must fail the checker).
#
#   bash Tests/soak/checker.sh                  # 600 s, commit delay 0..20 ms, negative control 30 s
#   NMC_SECONDS=3600 NMC_DELAY_MS=50 bash Tests/soak/checker.sh
#
# Knobs (environment): NMC_SECONDS=600 NMC_DELAY_MS=20 NMC_NEGATIVE=1 NMC_NEGATIVE_SECONDS=30
#   SOAK_SKIP_INSTALL=1 SOAK_SKIP_BUILD=1 NIMBUS_BIN= (default: the release build, built here)
set -euo pipefail
cd "$(dirname "$0")/../.."

export NMC_SECONDS=${NMC_SECONDS:-600}
export NMC_NEGATIVE_SECONDS=${NMC_NEGATIVE_SECONDS:-30}
say() { printf '[checker-soak %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

[ -n "${SOAK_SKIP_INSTALL:-}" ] || bash deploy/install-deps.sh
if [ -z "${NIMBUS_BIN:-}" ]; then
  if [ -z "${SOAK_SKIP_BUILD:-}" ]; then
    say "building nimbus (release)"
    swift build -c release --product nimbus >&2
  fi
  NIMBUS_BIN="$(swift build -c release --show-bin-path)/nimbus"
fi
[ -x "$NIMBUS_BIN" ] || { say "FAILED: no nimbus binary at $NIMBUS_BIN"; exit 1; }
export NIMBUS_BIN
if [ "${NMC_NEGATIVE:-1}" != 0 ] && [ -z "${NMC_NEGATIVE_BIN:-}" ]; then
  say "building the negative control (release, .build-nc)"
  NMC_NEGATIVE_BIN=$(bash NegativeControl/build.sh "$PWD/.build-nc")
  export NMC_NEGATIVE_BIN
fi

source Tests/test-postgres.sh
start_test_postgres "$(mktemp -d /tmp/nimbus-soak.XXXXXX)"
trap stop_test_postgres EXIT

say "scenario 90 with NMC_SECONDS=$NMC_SECONDS, binary $NIMBUS_BIN, load average $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
status=0
bash Tests/integration/scenarios/90-checker.sh || status=$?
echo "checker soak: $([ "$status" -eq 0 ] && echo PASSED || echo "FAILED (exit $status)") after $(( $(date +%s) - t0 ))s"
exit "$status"
