#!/usr/bin/env bash
# The one command that runs every test: installs what is missing, starts a scratch PostgreSQL
# cluster of its own (Unix socket only, removed afterwards), runs the Swift unit and database
# tests, then the curl scenarios in Tests/integration against the real `nimbus` binary.
set -euo pipefail
cd "$(dirname "$0")/.."

bash deploy/install-deps.sh

source Tests/test-postgres.sh
start_test_postgres "$(mktemp -d /tmp/nimbus-test.XXXXXX)"
trap stop_test_postgres EXIT
echo "run.sh: test PostgreSQL on $NIMBUS_TEST_PG_SOCKET"

status=0
swift build --build-tests
swift test --skip-build || status=1

export NIMBUS_BIN="$(swift build --show-bin-path)/nimbus"
bash Tests/integration/run.sh || status=1
bash Tests/soak/schemathesis.sh || status=1

exit $status
