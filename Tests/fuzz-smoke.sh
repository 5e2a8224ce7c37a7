#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ (request parser, chunked decoder, records/modify JSON) and
# runs each for a short while from its seeds, failing on any crash, trap, sanitizer report, leak
# or hang. Seeds: every case of Tests/http-corpus/cases.txt (the chunked target gets what follows
# their heads) and Fuzz/seeds/json; dictionaries of the grammars' tokens are in Fuzz/dictionaries.
# A crashing input is kept in Fuzz/artifacts/ (gitignored); turn it into a unit test
# (docs/fuzzing.md).
#
#   bash Tests/fuzz-smoke.sh                 # 20 s per target: the CI smoke run
#   FUZZ_SECONDS=600 bash Tests/fuzz-smoke.sh FuzzChunked   # longer, one target
#
# Environment: FUZZ_SECONDS (per target, default 20), FUZZ_CONFIGURATION (release or debug,
# default release), CC (C compiler for the corpus tool; default cc, clang or gcc).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

seconds=${FUZZ_SECONDS:-20}
configuration=${FUZZ_CONFIGURATION:-release}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(FuzzHTTPParser FuzzChunked FuzzRecordJSON)

work=$(mktemp -d /tmp/nimbus-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
artifacts="$repo/Fuzz/artifacts"
mkdir -p "$artifacts"

cc_bin=${CC:-}
[ -n "$cc_bin" ] || cc_bin=$(command -v cc || command -v clang || command -v gcc || true)
[ -n "$cc_bin" ] || { echo "fuzz-smoke: no C compiler (cc, clang or gcc) for the corpus tool" >&2; exit 1; }
"$cc_bin" -std=c99 -O1 -o "$work/corpus-client" Tests/http-corpus/corpus-client.c
"$work/corpus-client" seeds "$work/seeds-http" Tests/http-corpus/cases.txt >/dev/null
"$work/corpus-client" bodies "$work/seeds-chunked" Tests/http-corpus/cases.txt >/dev/null

started=$(date +%s)
# --sanitize=fuzzer tells SwiftPM that libFuzzer supplies main; the one -sanitize=fuzzer,address
# after it adds ASan (with --sanitize=fuzzer --sanitize=address swiftc keeps only the last of the
# two, so the code got ASan but no coverage counters and libFuzzer fuzzed blind).
swift build --package-path Fuzz -c "$configuration" --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address 2>&1 \
  | grep -v "Cannot export local symbol '__asan_extra_spill_area'" | tail -n 3
bin=$(swift build --package-path Fuzz -c "$configuration" --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address --show-bin-path)
echo "fuzz-smoke: build took $(( $(date +%s) - started ))s"

status=0
for target in "${targets[@]}"; do
  case $target in
    FuzzHTTPParser) seeds=("$work/seeds-http") max_len=20000 dict=http ;;
    FuzzChunked) seeds=("$work/seeds-chunked") max_len=8192 dict=http ;;
    FuzzRecordJSON) seeds=("$repo/Fuzz/seeds/json") max_len=8192 dict=json ;;
    *) echo "fuzz-smoke: unknown target $target" >&2; exit 2 ;;
  esac
  corpus="$work/corpus-$target"
  mkdir -p "$corpus"
  log="$work/$target.log"
  # The first directory collects new inputs (scratch); the seed directories are only read.
  # -timeout catches hangs (one input for longer than 10 s); -rss_limit_mb runaway memory.
  if "$bin/$target" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
       -dict="$repo/Fuzz/dictionaries/$dict.dict" \
       -rss_limit_mb=2048 -artifact_prefix="$artifacts/$target-" -print_final_stats=1 >"$log" 2>&1; then
    runs=$(grep -a -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    coverage=$(grep -a -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*' || echo '?')
    echo "fuzz-smoke: $target: $runs runs in ${seconds}s, $(ls "$corpus" | wc -l) new inputs, coverage $coverage, 0 crashes"
  else
    status=1
    echo "fuzz-smoke: $target FAILED:" >&2
    # The fatal error and the Swift backtrace come first; libFuzzer names the input at the end.
    grep -a -v '^#[0-9]\|^INFO:' "$log" | head -n 30 >&2
    grep -a 'Test unit written to\|^Base64:' "$log" >&2
    echo "fuzz-smoke: the input is in $artifacts/ (see docs/fuzzing.md to reproduce it)" >&2
  fi
done
echo "fuzz-smoke: $(( $(date +%s) - started ))s in total"
exit $status
