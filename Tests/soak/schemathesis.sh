#!/usr/bin/env bash
# Schemathesis against a running `nimbus`: generates requests from the OpenAPI document the server
# serves at /openapi.json and runs every check (server errors, status codes, content types,
# response schemas and headers, positive and negative data, missing headers, unsupported methods,
# ignored_auth, object_level_authorization, use-after-free, resource availability) plus a custom
# check that another user's token never reaches alice's objects (schemathesis_hooks.py).
#
#   bash Tests/soak/schemathesis.sh            # CI-sized: a few examples per operation (≈1–2 min)
#   bash Tests/soak/schemathesis.sh --long     # up to 200 examples per operation, 20 minutes
#   bash Tests/soak/schemathesis.sh --control  # negative control: the authorization checks must fail
#   NIMBUS_SCHEMATHESIS_ARGS="--seed 42" bash Tests/soak/schemathesis.sh --long   # more options
#
# Installs what it needs on a fresh Debian 12: python3 and python3-venv (apt-get, through sudo
# when not root), then a venv in Tests/soak/.venv (gitignored) with a pinned schemathesis from
# PyPI. The server runs on a fresh database of the scratch cluster (Tests/run.sh, or
# /tmp/nimbus-dev-pg.env), like the integration scenarios, whose helpers this script reuses.
# Ends with `schemathesis: N operations, M test cases, E server errors, V schema violations`
# and exits non-zero on any failure.
set -uo pipefail

mode=ci
case ${1:-} in
  --long) mode=long ;;
  # Negative control: the "other user" is alice's second device, so the authorization checks
  # must fail; the script succeeds only if they do.
  --control) mode=control ;;
  ""|--ci) ;;
  *) echo "usage: $0 [--ci|--long|--control]" >&2; exit 64 ;;
esac

SOAK_DIR=$(cd "$(dirname "$0")" && pwd)
SCHEMATHESIS_VERSION=4.32.5
VENV="$SOAK_DIR/.venv"

# MARK: - Install (before lib.sh, whose EXIT trap is for the server)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_python() {
  echo "schemathesis.sh: installing python3 and python3-venv" >&2
  as_root apt-get update -qq >/dev/null \
    && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null \
    || { echo "schemathesis.sh: apt-get install python3 python3-venv failed" >&2; exit 1; }
}

if ! command -v python3 >/dev/null || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  install_python
fi
if [ ! -x "$VENV/bin/schemathesis" ] || [ "$("$VENV/bin/schemathesis" --version 2>/dev/null)" != "schemathesis, version $SCHEMATHESIS_VERSION" ]; then
  echo "schemathesis.sh: installing schemathesis $SCHEMATHESIS_VERSION into $VENV" >&2
  rm -rf "$VENV"
  # Debian's python3 makes venvs only with python3-venv: install it when the first try fails.
  python3 -m venv "$VENV" 2>/dev/null || { rm -rf "$VENV"; install_python; python3 -m venv "$VENV"; } \
    || { echo "schemathesis.sh: python3 -m venv failed" >&2; exit 1; }
  "$VENV/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" \
    || { echo "schemathesis.sh: pip install schemathesis failed" >&2; exit 1; }
fi

# MARK: - Server, users, seed data

# shellcheck source=../integration/lib.sh
source "$SOAK_DIR/../integration/lib.sh"

# The per-token rate limit would answer most generated requests 429 (scenario 83 tests it).
start_store_server --requests-per-second-per-token 0
nimbus_admin user add alice >/dev/null
nimbus_admin user add bob >/dev/null
nimbus_admin schema import "$REPO_DIR/deploy/schemas/applocker.json" --environment development >/dev/null
issue_token ALICE alice fuzzer
issue_token ALICE_PHONE alice phone
issue_token BOB bob fuzzer
API_CONTAINER=iCloud.com.mirxa.AppLocker API_ENV=development

# Alice's objects, written from her phone so that the fuzzer's token also sees the notifications
# they fire (a device is not notified of its own changes). Bob writes nothing, ever.
note "seeding alice's objects"
api_ok "$ALICE_PHONE" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"seeded"}}}]}'
api_ok "$ALICE_PHONE" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"every-change","subscriptionType":"database","notificationInfo":{"title":"t","shouldSendContentAvailable":true,"desiredKeys":["appName"]}}}]}'
api_ok "$ALICE_PHONE" subscriptions/modify '{"operations":[{"operationType":"create","subscription":{"subscriptionID":"seeded-zone","subscriptionType":"zone","zoneID":{"zoneName":"seeded"},"firesOn":["create"]}}]}'
random_file "$TEST_TMP/photo" 5000
upload_asset "$ALICE_PHONE" "$TEST_TMP/photo" length FailedAuthEvent photoAsset
now=$(now_ms)
for zone in _defaultZone seeded; do
  api_ok "$ALICE_PHONE" records/modify "{\"zoneID\":{\"zoneName\":\"$zone\"},\"operations\":[
    {\"operationType\":\"create\",\"record\":{\"recordName\":\"evt-1\",\"recordType\":\"BlockedAppEvent\",\"fields\":{\"appName\":{\"value\":\"Safari\"},\"bundleID\":{\"value\":\"com.apple.Safari\"},\"deviceName\":{\"value\":\"mac\"},\"timestamp\":{\"value\":$now}}}},
    {\"operationType\":\"create\",\"record\":{\"recordName\":\"auth-1\",\"recordType\":\"FailedAuthEvent\",\"fields\":{\"appName\":{\"value\":\"Notes\"},\"timestamp\":{\"value\":$now},\"photoAsset\":$UP_FIELD}}},
    {\"operationType\":\"create\",\"record\":{\"recordName\":\"cmd-1\",\"recordType\":\"RemoteCommand\",\"fields\":{\"action\":{\"value\":\"lockAll\"},\"timestamp\":{\"value\":$now}}}},
    {\"operationType\":\"create\",\"record\":{\"recordName\":\"note-1\",\"recordType\":\"Note\",\"fields\":{\"title\":{\"value\":\"hello\"},\"count\":{\"value\":3},\"tags\":{\"value\":[\"a\",\"b\"]}}}}]}"
  [ "$(item_codes | sort | uniq -c | sed 's/^ *//')" = "4 ok" ] || fail "seeding $zone: $HTTP_BODY"
done
api_ok "$ALICE_PHONE" records/modify '{"operations":[{"operationType":"forceDelete","record":{"recordName":"cmd-1"}}]}'

# MARK: - Run

out="$SOAK_DIR/out"
rm -rf "$out"
mkdir -p "$out"
PEER=$BOB
[ "$mode" = control ] && PEER=$ALICE_PHONE
cat >"$TEST_TMP/wfc-auth.json" <<EOF
{"schemaVersion": "0.1", "auth": [
  {"name": "alice", "fixedHeaders": [{"name": "Authorization", "value": "Bearer $ALICE"}]},
  {"name": "bob", "fixedHeaders": [{"name": "Authorization", "value": "Bearer $PEER"}]}]}
EOF

case $mode in
  long) limits=(--max-examples 200 --phases examples,coverage,fuzzing,stateful --max-time 1200); budget=1500 ;;
  control) limits=(--max-examples 5 --phases examples,fuzzing,stateful --max-time 60); budget=180 ;;
  *) limits=(--max-examples 8 --phases examples,coverage,fuzzing,stateful --max-time 90); budget=240 ;;
esac
note "schemathesis ($mode) against $NIMBUS_URL/openapi.json"
started=$(date +%s)
# shellcheck disable=SC2086 # NIMBUS_SCHEMATHESIS_ARGS is a list of extra options
(cd "$SOAK_DIR" && SCHEMATHESIS_WFC_FILE="$TEST_TMP/wfc-auth.json" NIMBUS_PEER_TOKEN="$PEER" \
  NIMBUS_PEER_PROBE_REPORT="$out/peer-probes.txt" PYTHONPATH="$SOAK_DIR" \
  timeout -k 10 "$budget" "$VENV/bin/schemathesis" --config-file "$SOAK_DIR/schemathesis.toml" run "$NIMBUS_URL/openapi.json" \
    --checks all "${limits[@]}" --workers 1 --no-color --output-truncate false \
    --report junit,ndjson --report-dir "$out" ${NIMBUS_SCHEMATHESIS_ARGS:-}) >"$out/schemathesis.log" 2>&1
status=$?
took=$(( $(date +%s) - started ))
tail -n 60 "$out/schemathesis.log"

# MARK: - Figures

# Operations from the run's header, test cases from its summary, 5xx answers from /metrics,
# schema violations (ST108) from the log, peer replays from the hooks' report.
operations=$(sed -n 's/^ *Operations: *\([0-9]*\) selected.*/\1/p' "$out/schemathesis.log" | head -n 1)
cases=$(sed -n 's/^ *\([0-9][0-9]*\) generated.*/\1/p' "$out/schemathesis.log" | tail -n 1)
server_errors=$(curl -s --max-time 10 "$NIMBUS_URL/metrics" | grep '^nimbus_http_requests_total{.*status="5[0-9][0-9]"}' | awk '{s += $2} END {print s + 0}')
violations=$(grep -a -c 'Response violates schema' "$out/schemathesis.log")
probes=$(cat "$out/peer-probes.txt" 2>/dev/null)
echo "schemathesis.sh: $mode run took ${took}s (exit $status); reports in $out"
echo "schemathesis.sh: another user's token: ${probes:-no report}"
[ "$status" -eq 124 ] && fail "schemathesis did not finish within ${budget}s"
if [ "$mode" = control ]; then
  grep -a -q 'Object-level authorization' "$out/schemathesis.log" \
    || fail "negative control: alice's second device read alice's objects and no authorization check failed"
  ok "negative control: the authorization checks fail when the \"other user\" is alice herself"
  exit 0
fi
echo "schemathesis: ${operations:-?} operations, ${cases:-?} test cases, $server_errors server errors, $violations schema violations"
expect_no_server_errors
[ "$status" -eq 0 ] || fail "schemathesis reported failures (see above and $out/schemathesis.log)"
