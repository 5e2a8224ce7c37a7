# Where the test and bench scripts find programs, and how they say what they skip for not being
# root: the one place for both rules. Sourced (bash; safe under set -euo pipefail) by
# Tests/test-postgres.sh, and through it by Tests/run.sh, Tests/integration/lib.sh (every
# scenario), Tests/integration/run.sh and bench/lib.sh.
#
#   find_tool NAME        prints the path of the program NAME: PATH first, then where Debian puts
#                         programs a normal user's PATH (/usr/local/bin:/usr/bin:/bin) lacks:
#                         /usr/local/sbin, /usr/sbin, /sbin (pgbouncer, nginx, haproxy, runuser,
#                         useradd), then the newest /usr/lib/postgresql/*/bin (initdb, pg_ctl,
#                         postgres, pgbench). Status 1 and nothing printed when it is nowhere.
#   pg_find_bin           PG_BIN := the newest /usr/lib/postgresql/*/bin; status 1 when there is none
#   is_root               true when running as root
#   root_only STEP WHY    true as root; otherwise says `SKIP (not root): STEP — WHY` and records
#                         the line (with the scenario or script name) in $NIMBUS_SKIP_LOG when that
#                         is set, for the suite's summary; status 1 (the caller skips STEP).
#   report_skips FILE     prints the skipped steps recorded in FILE (nothing when there are none)

pg_find_bin() {
  local candidate
  PG_BIN=""
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do PG_BIN=$candidate; break; done
  [ -n "$PG_BIN" ]
}

find_tool() {
  local name=$1 path dir pg=""
  # type -P: a file on PATH only (not a shell function or alias of that name).
  if path=$(type -P -- "$name"); then printf '%s\n' "$path"; return 0; fi
  pg=$(PG_BIN="" && pg_find_bin && printf '%s' "$PG_BIN") || true
  for dir in /usr/local/sbin /usr/sbin /sbin $pg; do
    if [ -f "$dir/$name" ] && [ -x "$dir/$name" ]; then printf '%s\n' "$dir/$name"; return 0; fi
  done
  return 1
}

is_root() { [ "$(id -u)" -eq 0 ]; }

root_only() {
  is_root && return 0
  local line="SKIP (not root): $1 — $2"
  printf '%s\n' "$line"
  if [ -n "${NIMBUS_SKIP_LOG:-}" ]; then
    printf '%s: %s\n' "${SCENARIO_NAME:-$(basename "$0" .sh)}" "$line" >>"$NIMBUS_SKIP_LOG" || true
  fi
  return 1
}

report_skips() {
  local file=$1
  [ -s "$file" ] || return 0
  echo "skipped for not being root ($(wc -l <"$file") step(s); run as root, as CI does, to run them):"
  sed 's/^/  /' "$file"
}
