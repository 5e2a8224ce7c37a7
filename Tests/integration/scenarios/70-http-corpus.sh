#!/usr/bin/env bash
# The malformed-HTTP corpus (Tests/http-corpus/cases.txt) against the real server: every case on a
# fresh connection, byte for byte, by a small C client built here with the system's cc. Rejected
# cases must get their status with Connection: close and then a closed connection; accepted ones
# their answers, and a following GET /limits on the same connection when it stays open. After
# every case a fresh connection must get 200 from /healthz, and the server must still run at the
# end. Prints "N/N rejected with the expected status, M/M accepted, 0 crashes".
#
#   bash Tests/integration/scenarios/70-http-corpus.sh [CASE-NAME...]   # only the named cases
source "$(dirname "$0")/../lib.sh"

CORPUS_DIR="$REPO_DIR/Tests/http-corpus"
CC_BIN=${CC:-}
[ -n "$CC_BIN" ] || CC_BIN=$(command -v cc || command -v clang || command -v gcc || true)
[ -n "$CC_BIN" ] || fail "no C compiler (cc, clang or gcc) to build Tests/http-corpus/corpus-client.c"
"$CC_BIN" -std=c99 -O1 -Wall -o "$TEST_TMP/corpus-client" "$CORPUS_DIR/corpus-client.c" \
  || fail "could not build the corpus client"

read -r REJECTS ACCEPTS < <("$TEST_TMP/corpus-client" count "$CORPUS_DIR/cases.txt") || fail "the corpus manifest does not parse"
note "corpus: $REJECTS cases to reject, $ACCEPTS to accept"
if [ $# -eq 0 ]; then
  # The issue's floor: at least 100 rejected and 20 accepted cases.
  [ "$REJECTS" -ge 100 ] || fail "the corpus has only $REJECTS cases to reject (at least 100 wanted)"
  [ "$ACCEPTS" -ge 20 ] || fail "the corpus has only $ACCEPTS cases to accept (at least 20 wanted)"
fi

start_nimbus

"$TEST_TMP/corpus-client" run "$NIMBUS_PORT" "$CORPUS_DIR/cases.txt" "$@" | tee "$TEST_TMP/corpus.out"
client_status=${PIPESTATUS[0]}
summary=$(tail -n 1 "$TEST_TMP/corpus.out")
[ "$client_status" -eq 0 ] || fail_later "corpus: $summary"

process_alive "$NIMBUS_PID" || fail "nimbus (pid $NIMBUS_PID) is gone after the corpus"
healthy "after the corpus"
ok "nimbus still runs and answers /healthz after the corpus"

if grep -a -q -i 'fatal error\|precondition\|assertion' "$NIMBUS_LOG"; then
  fail_later "the server log mentions a fatal error: $(grep -a -i -m1 'fatal error\|precondition\|assertion' "$NIMBUS_LOG")"
fi

stop_nimbus || fail_later "nimbus did not exit 0 on SIGTERM after the corpus"
echo "$summary"
