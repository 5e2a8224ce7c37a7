#!/usr/bin/env bash
# Every benchmark's smoke mode, one after another (Tests/run.sh runs this): a bench that no longer
# starts, or whose pipeline no longer works, fails here instead of rotting until the next
# measurement. Each bench runs `bash bench/NAME.sh --smoke` (tiny sizes, a few seconds, a watchdog
# of its own) under a time limit of its own here too; its figures are printed, not judged.
#
#   BENCH_NIMBUS_BIN=.build/debug/nimbus bash bench/smoke.sh           # every bench
#   BENCH_NIMBUS_BIN=.build/debug/nimbus bash bench/smoke.sh http day  # only these
#
# BENCH_NIMBUS_BIN: the nimbus binary to run (default: the debug build, `swift build
# --show-bin-path`; bench/client.sh takes the nimbus-sync beside it). Nothing is built or
# installed (BENCH_SKIP_INSTALL=1; Tests/run.sh installs the tools). A bench whose tool is missing
# (valgrind, perf, slowhttptest, chromium, nginx, h2load) is skipped with the reason; with
# BENCH_SMOKE_STRICT=1 a skip counts as a failure. equalwork.sh is not run on its own: it is the
# equal-work reference inside records.sh, whose smoke mode requires a replay for every workload.
# Prints a line per bench (passed / FAILED with its exit status and the tail of its log / skipped)
# and `smoke: N passed, M failed, K skipped`; exits 1 when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# name:limit — the time limit (seconds) here, a little above the script's own watchdog.
BENCHES=(
  http:120 assets:120 records:180 longpoll:150 query:120 ratelimit:120 slowloris:150
  prune:120 day:150 scaleout:180 console:150 client:150 push:90 callgrind:180 perf:120 no-missed-change:120
)
needs() {  # needs NAME: the missing tool that NAME needs, if any
  case $1 in
    callgrind) command -v valgrind >/dev/null && command -v callgrind_control >/dev/null || echo "valgrind (callgrind) is not installed" ;;
    perf) if ! command -v perf >/dev/null; then echo "perf (linux-perf) is not installed"
          elif ! perf record -e cpu-clock -o /dev/null -- true >/dev/null 2>&1; then echo "perf record is not permitted here (kernel.perf_event_paranoid, container)"; fi ;;
    slowloris) command -v slowhttptest >/dev/null || echo "slowhttptest is not installed" ;;
    console) command -v chromium >/dev/null || echo "chromium is not installed" ;;
    http|scaleout) [ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || echo "nginx is not installed" ;;
    push) command -v h2load >/dev/null || echo "h2load (nghttp2-client) is not installed" ;;
  esac
}

if [ -z "${BENCH_NIMBUS_BIN:-}" ]; then
  BENCH_NIMBUS_BIN="$(swift build --show-bin-path)/nimbus"
fi
[ -x "$BENCH_NIMBUS_BIN" ] || { echo "smoke: no nimbus binary at $BENCH_NIMBUS_BIN (swift build first)" >&2; exit 1; }
export BENCH_NIMBUS_BIN BENCH_SKIP_INSTALL=1 BENCH_SKIP_BUILD=1
unset BENCH_SMOKE  # each bench gets --smoke

only=" $* "
LOGS=$(mktemp -d /tmp/nimbus-bench-smoke.XXXXXX)
passed=0 failed=0 skipped=0 failures="" T0=$(date +%s)
echo "smoke: every bench's --smoke with $BENCH_NIMBUS_BIN; logs in $LOGS (removed when all pass); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for entry in "${BENCHES[@]}"; do
  name=${entry%%:*} limit=${entry##*:}
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
  script=bench/$name.sh
  if [ ! -f "$script" ]; then
    echo "smoke: $name FAILED: $script does not exist"; failed=$((failed + 1)); failures+=" $name"; continue
  fi
  reason=$(needs "$name")
  if [ -n "$reason" ]; then
    if [ -n "${BENCH_SMOKE_STRICT:-}" ]; then
      echo "smoke: $name FAILED: $reason (BENCH_SMOKE_STRICT)"; failed=$((failed + 1)); failures+=" $name"
    else
      echo "smoke: $name skipped: $reason"; skipped=$((skipped + 1))
    fi
    continue
  fi
  t0=$(date +%s)
  # timeout signals the bench's whole process group, then kills what is left 20 s later.
  timeout -k 20 "$limit" bash "$script" --smoke >"$LOGS/$name.out" 2>"$LOGS/$name.err"
  rc=$?
  secs=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ]; then
    passed=$((passed + 1))
    echo "smoke: $name passed (${secs}s); its figures (not judged):"
    grep -v '^\s*$' "$LOGS/$name.out" | sed -n '1,40p' | sed 's/^/    /'
  else
    failed=$((failed + 1)) failures+=" $name"
    [ "$rc" = 124 ] && rc="124: over the ${limit}s limit"
    echo "smoke: $name FAILED (exit $rc, ${secs}s); the end of its log ($LOGS/$name.err):"
    tail -25 "$LOGS/$name.err" | sed 's/^/    /'
  fi
done
echo "smoke: $passed passed, $failed failed, $skipped skipped in $(( $(date +%s) - T0 ))s${failures:+ (failed:$failures)}"
if [ "$failed" = 0 ]; then rm -rf -- "$LOGS"; exit 0; fi
exit 1
