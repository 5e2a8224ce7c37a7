#!/usr/bin/env bash
# Client addresses and absolute URLs behind a proxy (`--trusted-proxy`, docs/scaling.md):
# - from a trusted peer, X-Forwarded-For / Forwarded name the client: the enrollment failure
#   throttle counts per forwarded client and the console's request log shows it; what a client
#   wrote to the left of the nearest untrusted hop does not count;
# - from any other peer (127.0.0.2 here), or with no --trusted-proxy at all, the headers are
#   ignored: spoofing X-Forwarded-For neither escapes the throttle nor changes the log;
# - X-Forwarded-Proto / -Host (or Forwarded proto= / host=) from a trusted peer make the absolute
#   URLs in answers (webcourierURL), unless --public-url is set;
# - through the shipped nginx and HAProxy configs (Tests/integration/proxies.sh), a client on
#   127.0.0.3 (127.0.0.5) is seen as itself and gets https URLs with the proxy's host and port;
# - a bad --trusted-proxy is refused with a sentence.
source "$(dirname "$0")/../lib.sh"
source "$IT_DIR/proxies.sh"

PER_ADDRESS=3
err=$("$NIMBUS_BIN" serve --listen 127.0.0.1:0 --database-url postgresql://127.0.0.1:1/x --trusted-proxy 10.0.0.0/33 2>&1 >/dev/null)
status=$?
[ "$status" = 64 ] && [[ $err == *"'--trusted-proxy' needs addresses or CIDR blocks"*"'10.0.0.0/33' is not one"* ]] \
  || fail "a bad --trusted-proxy: exit $status, $err"
ok "--trusted-proxy 10.0.0.0/33: exit 64, the bad block named"

start_store_server --trusted-proxy 127.0.0.1/32,::1 --enroll-failures-per-minute-per-address "$PER_ADDRESS" \
  --enroll-failures-per-minute 1000
TRUSTING_URL=$NIMBUS_URL ADMIN=$(admin_url)
start_nimbus --database-url "$NIMBUS_DB_URL"
PLAIN_URL=$NIMBUS_URL
start_nimbus --database-url "$NIMBUS_DB_URL" --trusted-proxy 127.0.0.1 --public-url https://sync.example.org
PUBLIC_URL=$NIMBUS_URL
NIMBUS_URL=$TRUSTING_URL
nimbus_admin user add alice >/dev/null
issue_token PHONE alice phone
ADMIN_TOKEN=$(nimbus_admin admin token issue ops | sed -n 's/^token: //p')

# enroll FROM BASE [HEADER...]: a wrong pairing code from local address FROM; echoes the status.
enroll() {
  local from=$1 base=$2; shift 2
  local headers=() header
  for header in "$@"; do headers+=(-H "$header"); done
  curl -s --max-time 20 --interface "$from" -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    "${headers[@]}" --data-binary '{"code":"ZZZZ-ZZZZ-ZZ","deviceName":"x"}' "$base/devices/enroll"
}

note "the enrollment throttle counts the client a trusted proxy names"
for i in $(seq 1 "$PER_ADDRESS"); do
  [ "$(enroll 127.0.0.1 "$TRUSTING_URL" 'X-Forwarded-For: 198.51.100.1')" = 401 ] || fail "failure $i for 198.51.100.1 was not 401"
done
[ "$(enroll 127.0.0.1 "$TRUSTING_URL" 'X-Forwarded-For: 198.51.100.1')" = 429 ] || fail "198.51.100.1 was not throttled after $PER_ADDRESS failures"
[ "$(enroll 127.0.0.1 "$TRUSTING_URL" 'X-Forwarded-For: 198.51.100.2')" = 401 ] || fail "198.51.100.2 was throttled for 198.51.100.1's failures"
# The client wrote 198.51.100.2 itself; the proxy appended what it saw: 198.51.100.1.
[ "$(enroll 127.0.0.1 "$TRUSTING_URL" 'X-Forwarded-For: 198.51.100.2, 198.51.100.1')" = 429 ] \
  || fail "an address written left of the nearest untrusted hop escaped the throttle"
[ "$(enroll 127.0.0.1 "$TRUSTING_URL" 'Forwarded: for="198.51.100.1:4711";proto=https')" = 429 ] \
  || fail "Forwarded: for=198.51.100.1 was not throttled"
ok "per forwarded client: 198.51.100.1 throttled after $PER_ADDRESS failures (X-Forwarded-For and Forwarded), 198.51.100.2 not"

note "from an untrusted peer the headers are ignored"
for i in $(seq 1 "$PER_ADDRESS"); do
  [ "$(enroll 127.0.0.2 "$TRUSTING_URL" "X-Forwarded-For: 203.0.113.$i")" = 401 ] || fail "failure $i from 127.0.0.2 was not 401"
done
[ "$(enroll 127.0.0.2 "$TRUSTING_URL" 'X-Forwarded-For: 203.0.113.99' 'Forwarded: for=203.0.113.98')" = 429 ] \
  || fail "127.0.0.2 escaped the throttle by writing a new X-Forwarded-For each time"
[ "$(enroll 127.0.0.1 "$PLAIN_URL" 'X-Forwarded-For: 198.51.100.7')" = 401 ] || fail "the plain server refused a first failure"
ok "127.0.0.2 throttled after $PER_ADDRESS failures whatever X-Forwarded-For it wrote"

note "the console's request log shows the client"
curl -sS --max-time 20 -H "Authorization: Bearer $ADMIN_TOKEN" -o "$TEST_TMP/requests" "$ADMIN/api/requests?route=enroll&limit=50" \
  || fail "GET /api/requests failed"
client_list=$(json_read rows client client <"$TEST_TMP/requests")
clients=$(sort <<<"$client_list" | uniq -c | sed 's/^ *//' | tr '\n' ' ')
for expected in 198.51.100.1 198.51.100.2 127.0.0.2; do
  grep -qx "$expected" <<<"$client_list" || fail "the request log lacks client $expected: $clients"
done
! grep -q '^203\.0\.113' <<<"$client_list" || fail "the request log believed an untrusted peer's X-Forwarded-For: $clients"
ok "request log clients: $clients"

# courier_url BASE [HEADER...]: the webcourierURL that tokens/create answers through BASE.
courier_url() {
  local base=$1; shift
  local headers=() header
  for header in "$@"; do headers+=(-H "$header"); done
  curl -sS --max-time 20 -X POST -H "Authorization: Bearer $PHONE" -H 'Content-Type: application/json' "${headers[@]}" \
    --data-binary '{}' "$base$(api_path tokens/create)" | json_read first webcourierURL
}

note "absolute URLs: scheme and host from a trusted proxy, unless --public-url"
url=$(courier_url "$TRUSTING_URL" 'X-Forwarded-Proto: https' 'X-Forwarded-Host: sync.example.org:8443')
[[ $url == https://sync.example.org:8443/webcourier/1/* ]] || fail "X-Forwarded-Proto/Host from a trusted peer: $url"
url=$(courier_url "$TRUSTING_URL" 'Forwarded: for=198.51.100.1;proto=https;host=sync.example.org')
[[ $url == https://sync.example.org/webcourier/1/* ]] || fail "Forwarded proto/host from a trusted peer: $url"
url=$(courier_url "$TRUSTING_URL" 'X-Forwarded-Proto: https' 'X-Forwarded-Host: evil.example/x?')
[[ $url == "https://127.0.0.1:${TRUSTING_URL##*:}/webcourier/1/"* ]] || fail "a host with a path in X-Forwarded-Host was used: $url"
url=$(courier_url "$PLAIN_URL" 'X-Forwarded-Proto: https' 'X-Forwarded-Host: evil.example')
[[ $url == "$PLAIN_URL/webcourier/1/"* ]] || fail "without --trusted-proxy the forwarded host was used: $url"
url=$(courier_url "$PUBLIC_URL" 'X-Forwarded-Proto: http' 'X-Forwarded-Host: other.example')
[[ $url == https://sync.example.org/webcourier/1/* ]] || fail "--public-url did not win over forwarded headers: $url"
ok "webcourierURL: https://sync.example.org[:8443] from trusted headers, the request's own host otherwise, --public-url first"

note "through the shipped nginx and HAProxy configs"
start_nginx "$(free_port)" "${TRUSTING_URL##*:}"
start_haproxy "$(free_port)" "${TRUSTING_URL##*:}"
# The throttle keeps counting a client for a minute: each proxy gets clients of its own.
for pair in "$NGINX_URL 127.0.0.3 127.0.0.4" "$HAPROXY_URL 127.0.0.5 127.0.0.6"; do
  read -r proxy client other <<<"$pair"
  # A client that writes its own X-Forwarded-For: the proxy appends what it saw.
  for i in $(seq 1 "$PER_ADDRESS"); do
    status=$(curl -sk --max-time 20 --interface "$client" -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
      -H 'X-Forwarded-For: 192.0.2.77' --data-binary '{"code":"ZZZZ-ZZZZ-ZZ","deviceName":"x"}' "$proxy/devices/enroll")
    [ "$status" = 401 ] || fail "$proxy: failure $i from $client was $status, not 401"
  done
  status=$(curl -sk --max-time 20 --interface "$client" -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -H 'X-Forwarded-For: 192.0.2.78' --data-binary '{"code":"ZZZZ-ZZZZ-ZZ","deviceName":"x"}' "$proxy/devices/enroll")
  [ "$status" = 429 ] || fail "$proxy: $client was not throttled after $PER_ADDRESS failures ($status)"
  status=$(curl -sk --max-time 20 --interface "$other" -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary '{"code":"ZZZZ-ZZZZ-ZZ","deviceName":"x"}' "$proxy/devices/enroll")
  [ "$status" = 401 ] || fail "$proxy: $other was throttled for $client's failures ($status)"
  url=$(curl -sk --max-time 20 -X POST -H "Authorization: Bearer $PHONE" -H 'Content-Type: application/json' --data-binary '{}' \
    "$proxy$(api_path tokens/create)" | json_read first webcourierURL)
  [[ $url == "$proxy/webcourier/1/"* ]] || fail "$proxy: webcourierURL $url is not under the proxy's own https URL"
  # A client's own Forwarded and X-Forwarded-Host must not pass the proxy: Forwarded would name
  # the client (it wins over X-Forwarded-For) and the host of the URLs in its answers.
  status=$(curl -sk --max-time 20 --interface "$other" -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -H 'Forwarded: for=192.0.2.79;host=evil.example' --data-binary '{"code":"ZZZZ-ZZZZ-ZZ","deviceName":"x"}' "$proxy/devices/enroll")
  [ "$status" = 401 ] || fail "$proxy: a first failure from $other with its own Forwarded header was $status"
  url=$(curl -sk --max-time 20 -X POST -H "Authorization: Bearer $PHONE" -H 'Content-Type: application/json' --data-binary '{}' \
    -H 'Forwarded: for=192.0.2.79;proto=http;host=evil.example' -H 'X-Forwarded-Host: evil.example' \
    "$proxy$(api_path tokens/create)" | json_read first webcourierURL)
  [[ $url == "$proxy/webcourier/1/"* ]] || fail "$proxy: a client's own Forwarded / X-Forwarded-Host made the URL $url"
  ok "$proxy: the client is $client (its own X-Forwarded-For and Forwarded ignored), URLs are $proxy/…"
done
curl -sS --max-time 20 -H "Authorization: Bearer $ADMIN_TOKEN" -o "$TEST_TMP/requests" "$ADMIN/api/requests?route=enroll&limit=100" \
  || fail "GET /api/requests failed"
for client in 127.0.0.3 127.0.0.5; do
  grep -q "\"client\":\"$client\"" "$TEST_TMP/requests" || fail "the request log lacks the proxied client $client"
done
! grep -q '"client":"192.0.2.' "$TEST_TMP/requests" || fail "the request log believed a client's own X-Forwarded-For through a proxy"
ok "the request log shows 127.0.0.3 and 127.0.0.5 for requests through nginx and HAProxy"
expect_no_server_errors
