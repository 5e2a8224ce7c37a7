# Helpers for the push scenarios (49-push-*): an APNs key made with openssl, the APNs stand-in
# (Tests/push/apns-standin.py, a real HTTP/2-over-TLS server) started on a loopback port, and its
# request log read back. Source after lib.sh. Everything started is registered with track_pid.
#
# Debian's python3-h2 is seen by /usr/bin/python3 only (not by a pyenv python3 on PATH).
STANDIN_PYTHON=${STANDIN_PYTHON:-/usr/bin/python3}
APNS_KEY_ID=ABC123DEFG
APNS_TEAM_ID=DEF123GHIJ
APNS_BUNDLE=com.mirxa.AppLocker

# make_apns_key: an Apple-style .p8 (PKCS#8 PEM, P-256) at APNS_KEY and its public half at APNS_PUB.
make_apns_key() {
  APNS_KEY=$TEST_TMP/apns-key.p8 APNS_PUB=$TEST_TMP/apns-key.pub.pem
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$APNS_KEY" 2>/dev/null \
    && openssl pkey -in "$APNS_KEY" -pubout -out "$APNS_PUB" 2>/dev/null || fail "openssl could not make a P-256 key"
}

# standin_start [PORT]: starts the stand-in (on PORT to come back after an outage, else any free
# port) and waits for it to listen. Sets STANDIN_PID, STANDIN_PORT, STANDIN_URL, STANDIN_CA,
# STANDIN_LOG (one JSON line per request) and STANDIN_CONTROL (the file it reads per request).
standin_start() {
  STANDIN_DIR=$TEST_TMP/standin STANDIN_LOG=$TEST_TMP/standin-requests.log STANDIN_CONTROL=$TEST_TMP/standin-control.json
  mkdir -p "$STANDIN_DIR"
  [ -f "$STANDIN_CONTROL" ] || echo '{}' >"$STANDIN_CONTROL"
  local out=$TEST_TMP/standin-$((++STANDIN_STARTS)).out
  "$STANDIN_PYTHON" "$REPO_DIR/Tests/push/apns-standin.py" --state-dir "$STANDIN_DIR" --public-key "$APNS_PUB" \
    --key-id "$APNS_KEY_ID" --team-id "$APNS_TEAM_ID" --topics "$APNS_BUNDLE" --port "${1:-0}" \
    --log "$STANDIN_LOG" --control "$STANDIN_CONTROL" >"$out" 2>&1 &
  STANDIN_PID=$!
  track_pid "$STANDIN_PID"
  local deadline=$(( $(now_ms) + 30000 ))
  until STANDIN_PORT=$(grep -a -o -m1 'listening on 127.0.0.1:[0-9]*' "$out" | sed 's/.*://') && [ -n "$STANDIN_PORT" ]; do
    process_alive "$STANDIN_PID" || fail "the APNs stand-in exited: $(tail -n 5 "$out") (python3-h2 missing? run deploy/install-deps.sh)"
    [ "$(now_ms)" -gt "$deadline" ] && fail "the APNs stand-in did not listen within 30 s"
    sleep 0.05
  done
  STANDIN_URL=https://127.0.0.1:$STANDIN_PORT STANDIN_CA=$STANDIN_DIR/ca.pem
}
STANDIN_STARTS=0

# standin_stop: SIGTERM (every connection dropped at once: an outage) and wait for the exit.
standin_stop() {
  kill -TERM "$STANDIN_PID" 2>/dev/null
  wait_exit "$STANDIN_PID" 10 || { kill -KILL "$STANDIN_PID" 2>/dev/null; wait "$STANDIN_PID" 2>/dev/null; }
}

# standin_control JSON: what the stand-in answers from the next request on ('{}': 200 again).
standin_control() { printf '%s\n' "$1" >"$STANDIN_CONTROL.tmp" && mv "$STANDIN_CONTROL.tmp" "$STANDIN_CONTROL"; }

# push_flags: the serve arguments of --push direct against the stand-in.
push_flags() {
  PUSH_FLAGS=(--push direct --apns-key-file "$APNS_KEY" --apns-key-id "$APNS_KEY_ID" --apns-team-id "$APNS_TEAM_ID"
              --apns-topics "$API_CONTAINER=$APNS_BUNDLE" --apns-url "$STANDIN_URL" --apns-ca-file "$STANDIN_CA")
}

# pushes [TOKEN]: the stand-in's requests (of TOKEN's device), one per line, tab-separated:
# time status reason apnsID pushType priority collapseID recordName notificationID title badge
# fieldsOmitted hasFields payloadBytes mutableContent contentAvailable iat openStreams connection
pushes() {
  [ -f "$STANDIN_LOG" ] || return 0
  "$STANDIN_PYTHON" - "$STANDIN_LOG" "${1:-}" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if "token" not in e or (sys.argv[2] and e["token"] != sys.argv[2]):
        continue
    p = e.get("payload") if isinstance(e.get("payload"), dict) else {}
    aps, nim, h = p.get("aps", {}), p.get("nimbus", {}), e.get("headers", {})
    alert = aps.get("alert", {}) if isinstance(aps.get("alert"), dict) else {}
    row = [e["time"], e["status"], e.get("reason") or "-", e.get("apnsID") or "-", h.get("apns-push-type", "-"),
           h.get("apns-priority", "-"), h.get("apns-collapse-id", "-"), nim.get("recordName", "-"), nim.get("notificationID", "-"),
           alert.get("title", "-"), aps.get("badge", "-"), nim.get("fieldsOmitted", False), "fields" in nim,
           len(json.dumps(p, separators=(",", ":")).encode()), aps.get("mutable-content", "-"), aps.get("content-available", "-"),
           (e.get("jwt") or {}).get("iat", "-"), e.get("openStreams", "-"), e.get("connection", "-")]
    print("\t".join(str(v) for v in row))
PY
}

# push_count TOKEN [STATUS]: requests for TOKEN (with that status).
push_count() { pushes "$1" | awk -F'\t' -v s="${2:-}" 's == "" || $2 == s' | wc -l; }

# wait_push_count TOKEN COUNT SECONDS [STATUS]: waits until the stand-in saw COUNT requests for
# TOKEN (with STATUS); status 1 when it did not within SECONDS. PUSH_SEEN is the last count.
wait_push_count() {
  local deadline=$(( $(now_ms) + $3 * 1000 ))
  while PUSH_SEEN=$(push_count "$1" "${4:-}"); [ "$PUSH_SEEN" -lt "$2" ]; do
    [ "$(now_ms)" -gt "$deadline" ] && return 1
    sleep 0.02
  done
}

# apns_token PREFIX N: a 32-byte device token (64 hex digits): PREFIX (the stand-in answers by it:
# ffff0410 410, ffff0400 400 …; aa… 200), then N in hex.
apns_token() { printf '%s%0*x' "$1" $((64 - ${#1})) "$2"; }
