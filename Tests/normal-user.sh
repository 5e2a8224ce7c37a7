#!/usr/bin/env bash
# A representative part of the suite as a normal user, so that what a newcomer meets (the README's
# test command run by a normal user with sudo, whose PATH lacks /usr/sbin) cannot regress unseen
# in CI, which runs as root. Tests/run.sh runs it when root; by hand:
#
#   bash Tests/normal-user.sh [PATTERN...]     # as root; default: 01- 15- 18- 20- (see below)
#
# As root it
#   - creates the system user nimbus-tester (NIMBUS_NORMAL_USER) when missing: no home directory,
#     no login shell; the account is kept, nothing else of its is;
#   - copies the checkout's files (tracked and untracked, not ignored ones; no .build) and the
#     built binary (NIMBUS_BIN, default the debug build) to a new /tmp/nimbus-as-user.XXXXXX
#     owned by that user: the checkout itself is only read;
#   - runs this script with --inner there as that user (runuser), with nothing of root's
#     environment but PATH=/usr/local/bin:/usr/bin:/bin (a normal user's), HOME and TMPDIR inside
#     the copy, and LANG;
#   - removes the copy (the cluster and every scenario's scratch directory are inside it).
# With --inner (as the normal user) it starts a PostgreSQL test cluster of its own (run as that
# user, Tests/test-postgres.sh), runs Tests/integration/run.sh with the patterns, and checks that
# the run's summary lists the steps skipped for not being root (scenario 15's relocation step when
# it runs). The scenarios chosen by default: 01-system-routes (a plain one), 15-data-dir-and-admin
# (a root-only step skipped, the rest as the normal user), 18-forwarded-headers (nginx and HAProxy,
# in /usr/sbin, started through proxies.sh like 17-behind-proxies does, in 5 s rather than 90) and
# 20-through-pgbouncer (pgbouncer, in /usr/sbin): about 80 s.
# Exits non-zero when any of that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
source Tests/tools.sh

DEFAULT_PATTERNS=(01-system-routes 15-data-dir-and-admin 18-forwarded-headers 20-through-pgbouncer)
NORMAL_PATH=/usr/local/bin:/usr/bin:/bin

if [ "${1:-}" = --inner ]; then
  shift
  ! is_root || { echo "normal-user: --inner runs as a normal user, not root" >&2; exit 64; }
  source Tests/test-postgres.sh
  TMPDIR=${TMPDIR:-/tmp}
  start_test_postgres "$(mktemp -d "$TMPDIR/nimbus-test.XXXXXX")"
  trap stop_test_postgres EXIT
  echo "normal-user: $(id -un) (uid $(id -u)), PATH=$PATH, test PostgreSQL as $(stat -c %U "$NIMBUS_TEST_PG_DATA") on $NIMBUS_TEST_PG_SOCKET"
  status=0
  bash Tests/integration/run.sh "$@" 2>&1 | tee "$TMPDIR/integration.out" || status=1
  for pattern in "$@"; do
    if [[ 15-data-dir-and-admin == *"$pattern"* ]] \
      && ! grep -q '^  15-data-dir-and-admin: SKIP (not root): a data directory under a private parent' "$TMPDIR/integration.out"; then
      echo "normal-user: the summary does not list scenario 15's root-only step as skipped" >&2
      status=1
    fi
  done
  exit "$status"
fi

if ! is_root; then
  root_only "the suite as a normal user (Tests/normal-user.sh)" \
    "it creates a user and switches to it; running as a normal user, the whole suite already runs as one" || true
  exit 0
fi
[ $# -gt 0 ] || set -- "${DEFAULT_PATTERNS[@]}"

user=${NIMBUS_NORMAL_USER:-nimbus-tester}
if ! id "$user" >/dev/null 2>&1; then
  echo "normal-user: creating the system user $user (no home directory, no login shell)"
  "$(find_tool useradd)" --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
fi
[ "$(id -u "$user")" -ne 0 ] || { echo "normal-user: $user is root" >&2; exit 1; }

bin=${NIMBUS_BIN:-$(swift build --show-bin-path)/nimbus}
[ -x "$bin" ] || { echo "normal-user: no nimbus binary at $bin (swift build)" >&2; exit 1; }

work=$(mktemp -d /tmp/nimbus-as-user.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo" "$work/home" "$work/tmp"
# The checkout's files as they are (not HEAD: uncommitted changes are what is being tested).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard \
    | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$work/repo"
else
  # (No git, or a checkout git refuses: another user's.) Build trees and the venv stay behind.
  tar --exclude='.build*' --exclude=.git --exclude=.venv -cf - . | tar -xf - -C "$work/repo"
fi
# Where a SwiftPM build puts it, so that it finds the copy's migrations beside it like at home.
mkdir -p "$work/repo/.build/normal-user/debug"
cp "$bin" "$work/repo/.build/normal-user/debug/nimbus"
chown -R "$user:" "$work"
chmod 755 "$work"
runuser_exe=$(find_tool runuser)
# The binary needs its Swift runtime (RUNPATH) readable by the user: not so with a toolchain in /root.
"$runuser_exe" -u "$user" -- "$work/repo/.build/normal-user/debug/nimbus" --version >"$work/version.out" 2>&1 \
  || { cat "$work/version.out" >&2; echo "normal-user: the nimbus binary does not run as $user (is the Swift toolchain readable by all?)" >&2; exit 1; }

echo "normal-user: scenarios $* as $user with PATH=$NORMAL_PATH in $work"
started=$(date +%s)
status=0
"$runuser_exe" -u "$user" -- env -i PATH="$NORMAL_PATH" HOME="$work/home" TMPDIR="$work/tmp" \
  LANG=C.UTF-8 USER="$user" LOGNAME="$user" NIMBUS_BIN="$work/repo/.build/normal-user/debug/nimbus" \
  ${NIMBUS_IT_TIMEOUT:+NIMBUS_IT_TIMEOUT="$NIMBUS_IT_TIMEOUT"} \
  bash -c 'cd "$1" && shift && exec bash Tests/normal-user.sh --inner "$@"' _ "$work/repo" "$@" </dev/null || status=$?
echo "normal-user: $([ "$status" -eq 0 ] && echo passed || echo "FAILED (exit $status)") as $user in $(( $(date +%s) - started ))s"
exit "$status"
