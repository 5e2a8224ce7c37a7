#!/usr/bin/env bash
# The one command that runs every test: installs what is missing, starts a scratch PostgreSQL
# cluster of its own (Unix socket only, removed afterwards), runs the Swift unit and database
# tests, then the curl scenarios in Tests/integration against the real `nimbus` binary, then a
# 60 s libFuzzer smoke run of the parsers (Tests/fuzz-smoke.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# Beside the server's packages, what the tests use: zbarimg decodes the QR codes the CLI draws.
bash deploy/install-deps.sh zbar-tools

source Tests/test-postgres.sh
start_test_postgres "$(mktemp -d /tmp/nimbus-test.XXXXXX)"
trap stop_test_postgres EXIT
echo "run.sh: test PostgreSQL on $NIMBUS_TEST_PG_SOCKET"

status=0
swift build --build-tests
# The prune-beside-writers test bounds every writer's wait (1 s): it runs on its own, after the
# rest, so that 500 tests running in parallel on 2 cores do not stretch its writers' waits.
QUIET_TESTS='pruningBesideWritersKeepsThemMovingAndDeletesOnlyExpiredRecords'
swift test --skip-build --skip "$QUIET_TESTS" || status=1
swift test --skip-build --filter "$QUIET_TESTS" || status=1

export NIMBUS_BIN="$(swift build --show-bin-path)/nimbus"
bash Tests/integration/run.sh || status=1
bash Tests/fuzz-smoke.sh || status=1
bash Tests/soak/schemathesis.sh || status=1

exit $status
