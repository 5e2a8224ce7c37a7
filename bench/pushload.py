#!/usr/bin/python3
"""Load and analysis tool of bench/push.sh (stdlib only; run with /usr/bin/python3).

  pushload.py jwt KEY.p8 KEY_ID TEAM_ID
      prints an ES256 provider token (APNs JWT) signed with KEY.p8 (python3-cryptography), for h2load.
  pushload.py paced PORT PATH TOKEN RATE SECONDS PREFIX OUT [THREADS]
      records/modify creates of one BlockedAppEvent each (recordName PREFIX-N) at RATE requests/s for
      at most SECONDS, over THREADS keep-alive connections (default 8); one line per write to OUT:
      recordName send_ms ack_ms status. Prints "sent N non200 M late L" (late: started > 50 ms
      behind schedule, the client could not keep the rate).
  pushload.py pair PORT PATH TOKEN_A TOKEN_B COUNT SECONDS PREFIX
      COUNT creates through A then B, alternating, one at a time on one keep-alive connection each,
      stopped after SECONDS; prints "a p50 P p90 P p99 P n N" and the same for b (ms), "non200 M".
  pushload.py latency STANDIN_LOG WRITES_FILE PREFIX
      joins the stand-in's requests (payload nimbus.recordName) with the writes: per push, stand-in
      arrival - write ack (and - write send); prints p50/p90/p99/max, pushes, writes without a push.
  pushload.py drain STANDIN_LOG PREFIX
      pushes of PREFIX's records at the stand-in: count, status 200 count, first/last arrival, rate.
  pushload.py standin-rate STANDIN_LOG TOKEN
      requests for TOKEN (h2load's) at the stand-in: count and rate between first and last arrival.
"""
import base64
import http.client
import json
import sys
import threading
import time


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    index = min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))
    return values[index]


def record_body(name):
    return json.dumps({"operations": [{"operationType": "create", "record": {
        "recordName": name, "recordType": "BlockedAppEvent",
        "fields": {"appName": {"value": "bench " + name}}}}]})


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(key_file, key_id, team_id):
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    with open(key_file, "rb") as file:
        key = serialization.load_pem_private_key(file.read(), password=None)
    header = b64url(json.dumps({"alg": "ES256", "kid": key_id}, separators=(",", ":")).encode())
    claims = b64url(json.dumps({"iss": team_id, "iat": int(time.time())}, separators=(",", ":")).encode())
    signing_input = (header + "." + claims).encode()
    r, s = utils.decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
    print(header + "." + claims + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big")))


class Client:
    def __init__(self, port, token):
        self.port, self.token, self.connection = port, token, None

    def post(self, path, body):
        for attempt in (1, 2):
            try:
                if self.connection is None:
                    self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.connection.request("POST", path, body, {"Authorization": "Bearer " + self.token,
                                                             "Content-Type": "application/json"})
                response = self.connection.getresponse()
                data = response.read()
                if response.status == 200 and b"serverErrorCode" in data:
                    return 299
                return response.status
            except (OSError, http.client.HTTPException):
                self.connection = None
                if attempt == 2:
                    return 0
        return 0


def paced(port, path, token, rate, seconds, prefix, out, threads=8):
    rate, seconds, threads = float(rate), float(seconds), int(threads)
    total = int(rate * seconds)
    lock = threading.Lock()
    counter = iter(range(total))
    rows, stats = [], {"non200": 0, "late": 0}
    start = time.time() + 0.2
    deadline = start + seconds + 10

    def worker():
        client = Client(port, token)
        while True:
            with lock:
                n = next(counter, None)
            if n is None:
                return
            due = start + n / rate
            now = time.time()
            if now > deadline:
                return
            if due > now:
                time.sleep(due - now)
            elif now - due > 0.05:
                with lock:
                    stats["late"] += 1
            name = "%s-%d" % (prefix, n)
            sent = time.time()
            status = client.post(path, record_body(name))
            acked = time.time()
            with lock:
                rows.append("%s %.3f %.3f %d" % (name, sent * 1000, acked * 1000, status))
                if status != 200:
                    stats["non200"] += 1

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    with open(out, "w") as file:
        file.write("\n".join(rows) + "\n")
    print("sent %d non200 %d late %d seconds %.2f" % (len(rows), stats["non200"], stats["late"], time.time() - start))


def pair(port, path, token_a, token_b, count, seconds, prefix):
    a, b = Client(port, token_a), Client(port, token_b)
    samples = {"a": [], "b": []}
    non200 = 0
    deadline = time.time() + float(seconds)
    for n in range(int(count)):
        if time.time() > deadline:
            break
        for label, client in (("a", a), ("b", b)) if n % 2 == 0 else (("b", b), ("a", a)):
            t0 = time.perf_counter()
            status = client.post(path, record_body("%s-%s-%d" % (prefix, label, n)))
            samples[label].append((time.perf_counter() - t0) * 1000)
            non200 += status != 200
    for label in ("a", "b"):
        s = samples[label]
        print("%s p50 %.2f p90 %.2f p99 %.2f n %d" % (label, percentile(s, 50), percentile(s, 90), percentile(s, 99), len(s)))
    print("non200 %d" % non200)


def standin_entries(log):
    with open(log) as file:
        for line in file:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def record_name(entry):
    payload = entry.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("nimbus"), dict):
        return payload["nimbus"].get("recordName")
    return None


def latency(log, writes_file, prefix):
    writes = {}
    with open(writes_file) as file:
        for line in file:
            parts = line.split()
            if len(parts) == 4 and parts[3] == "200":
                writes[parts[0]] = (float(parts[1]), float(parts[2]))
    from_ack, from_send, seen = [], [], set()
    statuses = {}
    for entry in standin_entries(log):
        name = record_name(entry)
        if not name or not name.startswith(prefix + "-") or name not in writes:
            continue
        statuses[entry.get("status")] = statuses.get(entry.get("status"), 0) + 1
        sent, acked = writes[name]
        from_ack.append(entry["time"] - acked)
        from_send.append(entry["time"] - sent)
        seen.add(name)
    times = [entry["time"] for entry in standin_entries(log) if (record_name(entry) or "").startswith(prefix + "-")]
    span = (max(times) - min(times)) / 1000 if len(times) > 1 else 0
    print("pushes %d writes %d unpushed %d statuses %s rate %.0f" % (
        len(from_ack), len(writes), len(set(writes) - seen),
        ",".join("%s:%d" % kv for kv in sorted(statuses.items(), key=str)), len(times) / span if span else 0))
    print("ack p50 %.1f p90 %.1f p99 %.1f max %.1f" % (percentile(from_ack, 50), percentile(from_ack, 90),
                                                      percentile(from_ack, 99), max(from_ack or [float("nan")])))
    print("send p50 %.1f p90 %.1f p99 %.1f max %.1f" % (percentile(from_send, 50), percentile(from_send, 90),
                                                       percentile(from_send, 99), max(from_send or [float("nan")])))


def drain(log, prefix):
    times, ok, sizes, streams = [], 0, [], 0
    for entry in standin_entries(log):
        name = record_name(entry)
        if name and name.startswith(prefix + "-"):
            times.append(entry["time"])
            ok += entry.get("status") == 200
            sizes.append(len(json.dumps(entry["payload"], separators=(",", ":")).encode()))
            streams = max(streams, entry.get("openStreams") or 0)
    span = (max(times) - min(times)) / 1000 if len(times) > 1 else 0
    print("pushes %d ok %d first %d last %d seconds %.3f rate %.0f payload_bytes %d max_streams %d" % (
        len(times), ok, min(times or [0]), max(times or [0]), span, (len(times) - 1) / span if span else 0,
        sorted(sizes)[len(sizes) // 2] if sizes else 0, streams))


def standin_rate(log, token):
    times, ok = [], 0
    for entry in standin_entries(log):
        if entry.get("token") == token:
            times.append(entry["time"])
            ok += entry.get("status") == 200
    span = (max(times) - min(times)) / 1000 if len(times) > 1 else 0
    print("requests %d ok %d seconds %.3f rate %.0f" % (len(times), ok, span, (len(times) - 1) / span if span else 0))


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "jwt":
        jwt(*arguments)
    elif command == "paced":
        paced(int(arguments[0]), *arguments[1:])
    elif command == "pair":
        pair(int(arguments[0]), *arguments[1:])
    elif command == "latency":
        latency(*arguments)
    elif command == "drain":
        drain(*arguments)
    elif command == "standin-rate":
        standin_rate(*arguments)
    else:
        sys.exit("pushload.py: unknown command " + command)
