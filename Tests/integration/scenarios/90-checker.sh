#!/usr/bin/env bash
# No-missed-change checker, CI-sized (issue 7, item 4; docs/checker.md): Tests/soak/nmcheck.c
# (compiled here with the toolchain's C compiler) runs 32 writers and 8 readers (half of them
# long-polling, a quarter joining late from no token) against one zone for NMC_SECONDS (default
# 30), while a trigger (Tests/soak/commit-delay.sql) makes every writing transaction sleep a
# random 0..NMC_DELAY_MS (default 20) ms between its sequence assignment and its COMMIT. It must
# print lost 0, missed 0, duplicated 0, regressed 0, token 0, unexpected 0, errors 0.
#
# Negative control, then: a nimbus built by NegativeControl/build.sh (sequences from
# a global PostgreSQL sequence, outside the zone lock; NegativeControl/NegativeControlWrite.swift)
# must make the same checker FAIL with missed > 0 within NMC_NEGATIVE_SECONDS (default 15). The
# scenario builds it into .build-nc (about 35 s from scratch on 2 cores) unless NMC_NEGATIVE_BIN
# names one; NMC_NEGATIVE=0 skips the control.
source "$(dirname "$0")/../lib.sh"

SECONDS_OF_WRITES=${NMC_SECONDS:-30}
NEGATIVE_SECONDS=${NMC_NEGATIVE_SECONDS:-15}
DELAY_MS=${NMC_DELAY_MS:-20}
WRITERS=32 READERS=8

cc_bin=${CC:-$(command -v cc || command -v clang || command -v gcc || true)}
[ -n "$cc_bin" ] || fail "no C compiler (cc, clang or gcc) for Tests/soak/nmcheck.c"
"$cc_bin" -O2 -pthread -o "$TEST_TMP/nmcheck" "$REPO_DIR/Tests/soak/nmcheck.c" || fail "cannot compile Tests/soak/nmcheck.c"

# run_checker BINARY LABEL SECONDS: a fresh database and server from BINARY, the commit delay, tokens,
# and one nmcheck run; sets CHECK_STATUS and CHECK_OUT (its output file).
run_checker() {
  local binary=$1 label=$2
  NIMBUS_BIN=$binary start_store_server
  psql_db "SELECT 1" >/dev/null
  "$NIMBUS_TEST_PG_BIN/psql" "$NIMBUS_DB_URL" -X -q -v ON_ERROR_STOP=1 -v max_ms="$DELAY_MS" \
    -f "$REPO_DIR/Tests/soak/commit-delay.sql" >"$TEST_TMP/delay-$label.out" 2>&1 \
    || fail "installing the commit delay failed: $(cat "$TEST_TMP/delay-$label.out")"
  NIMBUS_BIN=$binary nimbus_admin user add checker >/dev/null
  : >"$TEST_TMP/tokens-$label"
  local k pids=()
  # Eight devices, issued in parallel (each is a separate admin process).
  for k in 1 2 3 4 5 6 7 8; do
    ( NIMBUS_BIN=$binary issue_token T checker "device-$k"; printf '%s\n' "$T" >>"$TEST_TMP/tokens-$label" ) &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || fail "token issue failed"; done
  [ "$(wc -l <"$TEST_TMP/tokens-$label")" = 8 ] || fail "expected 8 tokens"
  CHECK_OUT=$TEST_TMP/nmcheck-$label.out
  timeout $(($3 + 120)) "$TEST_TMP/nmcheck" -p "$NIMBUS_PORT" -d "$(api_path x | sed 's#/x$##')" -t "$TEST_TMP/tokens-$label" \
    -w "$WRITERS" -r "$READERS" -s "$3" -z Checker >"$CHECK_OUT" 2>"$CHECK_OUT.err"
  CHECK_STATUS=$?
  sed 's/^/  /' "$CHECK_OUT"
}

note "checker against $NIMBUS_BIN: ${SECONDS_OF_WRITES}s, commit delay 0..${DELAY_MS} ms"
run_checker "$NIMBUS_BIN" main "$SECONDS_OF_WRITES"
if [ "$CHECK_STATUS" -ne 0 ]; then
  head -n 40 "$CHECK_OUT.err" >&2
  fail "the checker failed (exit $CHECK_STATUS)"
fi
grep -q '^RESULT: PASS$' "$CHECK_OUT" || fail "the checker did not print RESULT: PASS"
ok "$(grep '^nmcheck: lost' "$CHECK_OUT" | sed 's/^nmcheck: //')"
ok "$(grep '^nmcheck: [0-9]* write requests' "$CHECK_OUT" | sed 's/^nmcheck: //')"
delayed=$(psql_db "SELECT count(*) FROM pg_trigger WHERE tgname = 'nimbus_fault_commit_delay'")
[ "$delayed" = 1 ] || fail "the commit-delay trigger was not in place"
expect_no_server_errors
stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"

if [ "${NMC_NEGATIVE:-1}" != 0 ]; then
  negative_bin=${NMC_NEGATIVE_BIN:-}
  if [ -z "$negative_bin" ]; then
    note "building the negative control (NegativeControl/build.sh into .build-nc)"
    started=$(now_ms)
    negative_bin=$(bash "$REPO_DIR/NegativeControl/build.sh" "$REPO_DIR/.build-nc" 2>"$TEST_TMP/nc-build.log") \
      || { tail -n 20 "$TEST_TMP/nc-build.log" >&2; fail "the negative-control build failed"; }
    note "negative-control build took $(( ($(now_ms) - started) / 1000 )) s"
  fi
  note "negative control: $negative_bin must fail the checker"
  run_checker "$negative_bin" negative "$NEGATIVE_SECONDS"
  [ "$CHECK_STATUS" -eq 1 ] || fail "the negative control exited $CHECK_STATUS; expected the checker to fail (1)"
  missed=$(sed -n 's/^nmcheck: lost [0-9]*, missed \([0-9]*\),.*/\1/p' "$CHECK_OUT")
  [ "${missed:-0}" -gt 0 ] || fail "the negative control failed, but not with missed changes: $(grep '^RESULT' "$CHECK_OUT")"
  ok "negative control fails as it must: $(grep '^nmcheck: lost' "$CHECK_OUT" | sed 's/^nmcheck: //')"
  stop_nimbus
fi
