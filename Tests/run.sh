#!/usr/bin/env bash
# The one command that runs every test: installs what is missing, starts a scratch PostgreSQL
# cluster of its own (Unix socket only, removed afterwards), runs the Swift unit and database
# tests, then the curl scenarios in Tests/integration against the real `nimbus` binary, then a
# 60 s libFuzzer smoke run of the parsers (Tests/fuzz-smoke.sh).
# Runs as root (as CI does) or as a normal user with sudo (for the packages): a normal user skips
# the few steps only root can run, each with a `SKIP (not root): STEP — WHY` line, listed again at
# the end. As root it also runs a part of the suite as a normal user (Tests/normal-user.sh; it
# creates the system user nimbus-tester), so that what a normal user meets cannot break unseen.
set -euo pipefail
cd "$(dirname "$0")/.."
source Tests/tools.sh
# The steps skipped for not being root (root_only), for the summary at the end.
export NIMBUS_SKIP_LOG
NIMBUS_SKIP_LOG=$(mktemp "${TMPDIR:-/tmp}/nimbus-skipped.XXXXXX")

# Beside the server's packages, what the tests use: chromium renders the admin console (scenario 45);
# zbarimg decodes the QR codes the CLI draws (python3 turns the drawing printed by `nimbus device
# pair` into an image for it); nginx, haproxy and pgbouncer stand in front of the servers in the
# scale-out scenarios (17-19; started on loopback ports by the scenarios, never as services);
# python3-h2 and python3-cryptography run the APNs stand-in (Tests/push/apns-standin.py) that the
# push tests start; nghttp2-client's h2load measures the stand-in's ceiling in bench/push.sh --smoke;
# patroni, etcd-server and etcd-client run deploy/ha/ for the failover scenarios (96-99; ha.sh starts
# them on loopback ports as an unprivileged user, never as services); valgrind, linux-perf and
# slowhttptest run bench/callgrind.sh, perf.sh and slowloris.sh --smoke (bench/smoke.sh).
bash deploy/install-deps.sh zbar-tools python3 python3-h2 python3-cryptography nghttp2-client chromium nginx haproxy pgbouncer \
  patroni etcd-server etcd-client valgrind linux-perf slowhttptest

source Tests/test-postgres.sh
# Servers started by the tests and benches put their admin console on a free port (several run at once).
export NIMBUS_ADMIN_LISTEN=${NIMBUS_ADMIN_LISTEN:-127.0.0.1:0}
start_test_postgres "$(mktemp -d /tmp/nimbus-test.XXXXXX)"
trap 'stop_test_postgres; rm -f "$NIMBUS_SKIP_LOG"' EXIT
echo "run.sh: test PostgreSQL on $NIMBUS_TEST_PG_SOCKET"

status=0
# Every Swift test's output also goes to a log, so the end of the run can list what failed (a CI
# excerpt shows only the end).
test_log=$(mktemp /tmp/nimbus-swift-tests.XXXXXX)
swift build --build-tests
# Tests that bound a latency run on their own, one after another, after the rest, so that 600
# tests running in parallel on 2 cores do not stretch what they measure: the prune-beside-writers
# test bounds every writer's wait (1 s); the live-mode test bounds delivery p99 (1 s); the pool test
# bounds each waiter's timeout.
QUIET_TESTS=(
  'pruningBesideWritersKeepsThemMovingAndDeletesOnlyExpiredRecords'
  'everyWriteReachesALiveDeviceWithinASecondAndAServerRestartLosesNothing'
  # The pool's waiters each give up after their own 0.6 s timeout: with 900 tests in parallel the
  # holder's 3 s borrow once timed out before it started.
  'waitersArrivingApartEachGiveUpAfterTheirOwnTimeout'
  # NimbusKit's journal: the last thousand of 10,000 enqueues cost no more time than the first.
  'tenThousandSingleEnqueuesCostTheSameAtTheEndAsAtTheStart'
  # The deadline helper answers nil at 0.2 s, not when a 3 s operation ends: with the cooperative
  # pool busy with 990 tests its timer once ran 33 s late.
  'aSlowOperationGivesNilAtTheDeadline'
  # The event loop's timer heap: a 50 ms header timeout answers within 100 ms of its deadline.
  'aHeaderTimeoutFiresAtItsDeadlineNotAtTheNextScan'
  # libpq's connect_timeout of 2 s against a silent socket: among 1,045 parallel tests the
  # blocking thread's wait once stretched to 49 s.
  'connectTimeoutBoundsAServerThatNeverAnswers'
  # A server at 1 request a second after a burst of 2: the engine's eight one-record sends must
  # outrun the refill; among 1,164 parallel tests they once took longer and none was throttled.
  'aThrottledDeviceWaitsAtLeastRetryAfterAndLosesNothing'
  # Ten rounds of a write and two overlapping fetches within 60 s (a hang never ends): among 1,163
  # parallel tests on 2 cores a round once took 20 s (alone: 0.4 s).
  'twoOverlappingFetchesBothEndAndTheSecondSeesWhatWasWrittenBeforeIt'
  # Live delivery's p99 under 1 s from a write's acknowledgement to the other engine's apply: beside
  # other suites at load 4+ it once measured 1.5-3.6 s (alone: passes).
  'everyWriteReachesALiveDeviceWithinASecondAndAServerRestartLosesNothing'
)
skip_args=()
for test in "${QUIET_TESTS[@]}"; do skip_args+=(--skip "$test"); done
# At most 16 tests at once (Swift Testing starts every test of the run at once by default): on 2
# cores the 1,160 tests then finish in ~70 s instead of ~95 s, and no test waits 20-60 s behind the
# others for a thread or a database connection (a pool test's 5 s acquire once ran out that way).
swift test --skip-build --experimental-maximum-parallelization-width 16 "${skip_args[@]}" 2>&1 | tee -a "$test_log" || status=1
for test in "${QUIET_TESTS[@]}"; do
  swift test --skip-build --filter "$test" 2>&1 | tee -a "$test_log" || status=1
done

# The scenarios run against the release server, the one users run (built like deploy/serve.sh
# builds it, with the HTTP core's exclusivity checks off); the client programs they start as
# devices (nimbus-sync, the examples) come from the debug build above.
debug_bin_dir="$(swift build --show-bin-path)"
swift build -c release --product nimbus || status=1
export NIMBUS_BIN="$(swift build -c release --show-bin-path)/nimbus"
export NIMBUS_CLIENT_BIN_DIR="$debug_bin_dir"
# The rolling-upgrade scenario serves one database with this binary and the previous schema
# version's, built here (outside the scenario's time limit; kept in .build/previous).
NIMBUS_PREVIOUS_BIN=$(bash Tests/previous-version.sh) || { echo "run.sh: the previous version could not be built"; status=1; }
export NIMBUS_PREVIOUS_BIN
bash Tests/integration/run.sh || status=1
# Every benchmark's smoke mode (bench/smoke.sh: tiny sizes, this build's binaries, each bounded;
# push's included): a bench that no longer starts or whose pipeline broke fails here; the figures print.
BENCH_NIMBUS_BIN="$debug_bin_dir/nimbus" bash bench/smoke.sh || status=1
# A few scenarios again as a normal user with a normal user's PATH (root only: it switches users).
bash Tests/normal-user.sh || status=1
bash Tests/fuzz-smoke.sh || status=1
bash Tests/soak/schemathesis.sh || status=1

if grep -q -E '✘|error: ' "$test_log"; then
  echo "run.sh: Swift test failures (from $test_log):"
  grep -E '✘|error: ' "$test_log" | head -40
fi
report_skips "$NIMBUS_SKIP_LOG"
echo "run.sh: exit $status"
exit $status
