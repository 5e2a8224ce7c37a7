#!/usr/bin/env bash
# /healthz, /metrics and /limits answer 200; /limits shows every docs/api.md limit with its default and
# configured values (flag > environment > default, and the configured value is enforced);
# /metrics counts the requests just made by route, method and status; every answer has a Date.
source "$(dirname "$0")/../lib.sh"

# expect_date: the last answer has an IMF-fixdate Date within a few seconds of now.
expect_date() {
  local value seconds
  value=$(header_value Date)
  [[ $value =~ ^(Mon|Tue|Wed|Thu|Fri|Sat|Sun),\ [0-9]{2}\ [A-Z][a-z]{2}\ [0-9]{4}\ [0-9]{2}:[0-9]{2}:[0-9]{2}\ GMT$ ]] \
    || fail "$1: Date header '$value' is not an IMF-fixdate"
  seconds=$(date -u -d "$value" +%s) || fail "$1: unparseable Date '$value'"
  local skew=$(( seconds - $(date -u +%s) ))
  [ "${skew#-}" -le 5 ] || fail "$1: Date '$value' is ${skew}s off the clock"
}

start_nimbus --pool-size 5

note "GET /healthz"
for i in 1 2 3; do
  request GET /healthz
  expect_status 200 "GET /healthz"
  expect_date "GET /healthz"
done
expect_json_field status ok
round_trip=$(json_field roundTripMs) || fail "/healthz has no database.roundTripMs: $HTTP_BODY"
[[ $round_trip =~ ^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] || fail "roundTripMs '$round_trip' is not a number"
[[ $(header_value Content-Type) == application/json* ]] || fail "/healthz is not JSON"
ok "/healthz: 200 ok with database round trip $round_trip ms"

note "GET /limits with defaults"
request GET /limits
expect_status 200 "GET /limits"
expect_date "GET /limits"
[[ $(header_value Content-Type) == application/json* ]] || fail "/limits is not JSON"
declare -A documented=(
  [maxOperationsPerRequest]=400 [maxRecordBytes]=1048576 [maxRequestBytes]=8388608 [maxResultsLimit]=400
  [maxWaitSeconds]=55 [heartbeatSeconds]=20 [maxAssetTokensPerRequest]=200 [notificationRetentionDays]=7
  [maxRequestLineBytes]=8192 [maxHeaderLineBytes]=8192 [maxHeaderBytes]=65536 [maxHeaderCount]=100
  [headerTimeoutSeconds]=10 [bodyTimeoutSeconds]=30 [keepAliveTimeoutSeconds]=60
)
for key in "${!documented[@]}"; do
  expect_json_field "$key" "${documented[$key]}"
done
# Keys docs/api.md lists without a number: present and a positive whole number.
for key in maxAssetBytes userQuotaBytes maxWaitersPerDevice maxWaiters tombstoneRetentionDays; do
  value=$(json_field "$key") || fail "/limits lacks $key: $HTTP_BODY"
  [[ $value =~ ^[1-9][0-9]*$ ]] || fail "/limits $key = '$value' is not a positive whole number"
done
ok "/limits lists every docs/api.md key with its default"
get_limits_calls=2

note "GET /metrics counts what was asked"
request GET /nope
expect_status 404 "GET /nope"
expect_date "GET /nope"
request POST /limits
expect_status 405 "POST /limits"
expect_date "POST /limits"
request HEAD /limits
expect_status 200 "HEAD /limits"
expect_date "HEAD /limits"
request GET /metrics
expect_status 200 "GET /metrics"
expect_date "GET /metrics"
[[ $(header_value Content-Type) == text/plain* ]] || fail "/metrics is not text/plain: $(header_value Content-Type)"
metrics=$HTTP_BODY

# metric_value SERIES: the value of the exact series line (name and labels) in the scrape.
metric_value() {
  printf '%s\n' "$metrics" | grep -v '^#' | grep -F -m1 "$1 " | sed 's/.* //'
}
expect_metric() {
  local value
  value=$(metric_value "$1")
  [ -n "$value" ] || fail "/metrics lacks $1; got: $(printf '%s\n' "$metrics" | grep -v '^#' | head -n 30)"
  # Prometheus may print 3 as 3 or 3.0.
  [ "${value%.0}" = "$2" ] || fail "/metrics $1 = $value, expected $2"
}
expect_metric 'nimbus_http_requests_total{route="/healthz",method="GET",status="200"}' 3
expect_metric 'nimbus_http_requests_total{route="/limits",method="GET",status="200"}' 1
expect_metric 'nimbus_http_requests_total{route="/limits",method="HEAD",status="200"}' 1
expect_metric 'nimbus_http_requests_total{route="(unrouted)",method="GET",status="404"}' 1
expect_metric 'nimbus_http_requests_total{route="(unrouted)",method="POST",status="405"}' 1
expect_metric 'nimbus_http_request_duration_seconds_count{route="/healthz"}' 3
expect_metric 'nimbus_http_request_duration_seconds_bucket{route="/healthz",le="+Inf"}' 3
expect_metric 'nimbus_db_pool_max' 5
for gauge in nimbus_http_open_connections nimbus_db_pool_in_use nimbus_db_pool_idle; do
  value=$(metric_value "$gauge")
  [[ $value =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "/metrics gauge $gauge is '$value'"
done
grep -q '^# TYPE nimbus_http_requests_total counter$' <<<"$metrics" || fail "/metrics lacks the counter TYPE line"
grep -q '^# TYPE nimbus_http_request_duration_seconds histogram$' <<<"$metrics" || fail "/metrics lacks the histogram TYPE line"
ok "/metrics counts requests by route, method and status"

request GET /metrics
metrics=$HTTP_BODY
expect_metric 'nimbus_http_requests_total{route="/healthz",method="GET",status="200"}' 3
value=$(metric_value 'nimbus_http_requests_total{route="/metrics",method="GET",status="200"}')
[ "${value%.0}" -ge 1 ] 2>/dev/null || fail "/metrics does not count its own scrapes (got '$value')"
ok "a second scrape counts the first one"

note "a server with overridden limits (flag, environment, flag over environment)"
stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"
NIMBUS_MAX_REQUEST_BYTES=1000 NIMBUS_MAX_HEADER_COUNT=70 NIMBUS_KEEP_ALIVE_TIMEOUT_SECONDS=7 \
  start_nimbus --max-header-count 50 --max-request-line-bytes 4000
request GET /limits
expect_status 200 "GET /limits (configured)"
expect_json_field maxRequestBytes 1000
expect_json_field maxHeaderCount 50
expect_json_field maxRequestLineBytes 4000
expect_json_field keepAliveTimeoutSeconds 7
expect_json_field maxHeaderLineBytes 8192
expect_json_field maxOperationsPerRequest 400
ok "/limits shows configured values; the flag wins over the environment"

# The configured body limit is the one enforced: 1000 bytes pass (405 once read), 1001 do not.
head -c 1000 /dev/zero | tr '\0' a >"$TEST_TMP/body-1000"
head -c 1001 /dev/zero | tr '\0' a >"$TEST_TMP/body-1001"
request POST /limits -H 'Expect:' -H 'Content-Type: application/octet-stream' --data-binary @"$TEST_TMP/body-1000"
expect_status 405 "POST of 1000 bytes with NIMBUS_MAX_REQUEST_BYTES=1000"
request POST /limits -H 'Expect:' -H 'Content-Type: application/octet-stream' --data-binary @"$TEST_TMP/body-1001"
expect_status 413 "POST of 1001 bytes with NIMBUS_MAX_REQUEST_BYTES=1000"
expect_error_body LIMIT_EXCEEDED
expect_date "413"
ok "the environment-configured body limit is enforced"

stop_nimbus || fail "nimbus did not exit 0 on SIGTERM"
