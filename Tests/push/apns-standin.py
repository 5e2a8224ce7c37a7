#!/usr/bin/python3
"""An APNs stand-in for the tests: HTTP/2 over TLS (ALPN h2) with its own CA, Apple's request checks
and answers, and a log of every request.

  apns-standin.py --state-dir DIR --public-key KEY.pub.pem --key-id KID --team-id TEAM \
                  --topics BUNDLE[,BUNDLE...] [--port 0] [--log FILE] [--control FILE] [--http1]

DIR holds the CA (ca.pem, for the client's --apns-ca-file) and the server's certificate for
127.0.0.1 and localhost, made with the openssl CLI on first start and reused on restart. Prints
"apns-standin: listening on 127.0.0.1:PORT" when ready; SIGTERM drops every connection and exits.

POST /3/device/<hex token> is checked as APNs does: the bearer JWT (ES256 signature against
--public-key, kid, iss, iat under an hour old), apns-topic in --topics, apns-push-type,
apns-priority (5 for background), apns-id, apns-expiration, apns-collapse-id, payload size.
A request that passes is answered by command:
  - device token prefix ffff0400 -> 400 BadDeviceToken, ffff0410 -> 410 Unregistered (with
    timestamp), ffff0403 -> 403 ExpiredProviderToken, ffff0429 -> 429 TooManyRequests (Retry-After
    3), ffff0500 -> 500 InternalServerError, ffff0503 -> 503 ServiceUnavailable;
  - the control file (JSON, read per request, may be absent): {"answer": {"status": 500, "reason":
    "InternalServerError", "retryAfter": 2}} answers every request so; {"rejectIssuedBefore":
    SECONDS} answers 403 ExpiredProviderToken to tokens issued earlier; {"delayMillis": N} holds
    each answer N ms (streams stay open, to show multiplexing);
  - otherwise 200.
Every request adds one JSON line to the log: connection and stream ids, open streams on that
connection, token, apns-id, headers (authorization as its decoded kid/iss/iat), payload, answer.
"""

import argparse
import asyncio
import base64
import itertools
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import uuid

import h2.config
import h2.connection
import h2.events
import h2.exceptions
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils

COMMANDED = {
    "ffff0400": (400, "BadDeviceToken"),
    "ffff0410": (410, "Unregistered"),
    "ffff0403": (403, "ExpiredProviderToken"),
    "ffff0429": (429, "TooManyRequests"),
    "ffff0500": (500, "InternalServerError"),
    "ffff0503": (503, "ServiceUnavailable"),
}
TOKEN_MAX_AGE = 3600
MAX_PAYLOAD = 4096


def make_certificates(directory):
    """A CA and a server certificate for 127.0.0.1/localhost signed by it (P-256, two days)."""
    if all(os.path.exists(os.path.join(directory, name)) for name in ("ca.pem", "server.pem", "server.key")):
        return
    os.makedirs(directory, exist_ok=True)

    def openssl(*arguments):
        subprocess.run(["openssl", *arguments], cwd=directory, check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Nimbus APNs stand-in CA")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(directory, "server.ext"), "w") as extensions:
        extensions.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                         "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "server.ext")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Verdict(Exception):
    """The answer to a request that fails a check."""

    def __init__(self, status, reason, claims=None):
        super().__init__(reason)
        self.status, self.reason, self.claims = status, reason, claims


class StandIn:
    def __init__(self, options):
        self.options = options
        with open(options.public_key, "rb") as file:
            self.public_key = serialization.load_pem_public_key(file.read())
        self.topics = set(filter(None, options.topics.split(",")))
        self.connection_ids = itertools.count(1)
        self.log = open(options.log, "a") if options.log else None
        self.protocols = set()

    def control(self):
        if not self.options.control:
            return {}
        try:
            with open(self.options.control) as file:
                return json.load(file)
        except (OSError, ValueError):
            return {}

    def check_jwt(self, authorization, control):
        """Returns the JWT's (kid, iss, iat) or raises the Verdict APNs would give."""
        if not authorization:
            raise Verdict(403, "MissingProviderToken")
        match = re.fullmatch(r"bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)", authorization)
        if not match:
            raise Verdict(403, "InvalidProviderToken")
        try:
            header = json.loads(b64url_decode(match.group(1)))
            claims = json.loads(b64url_decode(match.group(2)))
            signature = b64url_decode(match.group(3))
        except ValueError:
            raise Verdict(403, "InvalidProviderToken")
        if header.get("alg") != "ES256" or header.get("kid") != self.options.key_id:
            raise Verdict(403, "InvalidProviderToken")
        if claims.get("iss") != self.options.team_id or not isinstance(claims.get("iat"), int):
            raise Verdict(403, "InvalidProviderToken")
        # JWS ES256 (RFC 7518 section 3.4): 32-byte r then 32-byte s.
        if len(signature) != 64:
            raise Verdict(403, "InvalidProviderToken")
        der = utils.encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        signing_input = (match.group(1) + "." + match.group(2)).encode()
        try:
            self.public_key.verify(der, signing_input, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise Verdict(403, "InvalidProviderToken")
        iat = claims["iat"]
        now = time.time()
        if iat > now + 300:
            raise Verdict(403, "InvalidProviderToken")
        decoded = {"kid": header["kid"], "iss": claims["iss"], "iat": iat}
        if now - iat >= TOKEN_MAX_AGE or iat < control.get("rejectIssuedBefore", 0):
            raise Verdict(403, "ExpiredProviderToken", decoded)
        return decoded

    def answer(self, method, path, headers, body):
        """(status, reason, token, jwt claims) for one request."""
        control = self.control()
        if method != "POST":
            return 405, "MethodNotAllowed", None, None
        match = re.fullmatch(r"/3/device/([^/]*)", path)
        if not match:
            return 404, "BadPath", None, None
        token = match.group(1)
        try:
            if not re.fullmatch(r"(?:[0-9a-fA-F]{2})+", token):
                raise Verdict(400, "BadDeviceToken")
            claims = self.check_jwt(headers.get("authorization"), control)
        except Verdict as verdict:
            return verdict.status, verdict.reason, token, verdict.claims
        try:
            self.check_headers(headers, body)
        except Verdict as verdict:
            return verdict.status, verdict.reason, token, claims
        commanded = control.get("answer")
        if commanded:
            return commanded.get("status", 500), commanded.get("reason"), token, claims
        status, reason = COMMANDED.get(token[:8].lower(), (200, None))
        return status, reason, token, claims

    def check_headers(self, headers, body):
        topic = headers.get("apns-topic")
        if not topic:
            raise Verdict(400, "MissingTopic")
        if topic not in self.topics:
            raise Verdict(400, "TopicDisallowed")
        push_type = headers.get("apns-push-type")
        if push_type not in ("alert", "background"):
            raise Verdict(400, "InvalidPushType")
        priority = headers.get("apns-priority", "10")
        if priority not in ("5", "10") or (push_type == "background" and priority != "5"):
            raise Verdict(400, "BadPriority")
        if "apns-id" in headers:
            try:
                uuid.UUID(headers["apns-id"])
            except ValueError:
                raise Verdict(400, "BadMessageId")
        if not re.fullmatch(r"[0-9]+", headers.get("apns-expiration", "0")):
            raise Verdict(400, "BadExpirationDate")
        if len(headers.get("apns-collapse-id", "").encode()) > 64:
            raise Verdict(400, "BadCollapseId")
        if not body:
            raise Verdict(400, "PayloadEmpty")
        if len(body) > MAX_PAYLOAD:
            raise Verdict(413, "PayloadTooLarge")

    def record(self, entry):
        if self.log:
            self.log.write(json.dumps(entry, sort_keys=True) + "\n")
            self.log.flush()


class Connection(asyncio.Protocol):
    """One TLS connection: an h2 server connection and its streams."""

    def __init__(self, stand_in):
        self.stand_in = stand_in
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams = {}  # stream id -> {"headers": dict, "body": bytearray}
        self.open_streams = 0
        self.transport = None
        # Unique across restarts of the stand-in (they append to the same log).
        self.id = f"{os.getpid()}.{next(stand_in.connection_ids)}"

    def connection_made(self, transport):
        self.transport = transport
        self.stand_in.protocols.add(self)
        if self.stand_in.options.http1:
            self.http1 = bytearray()
            return
        self.http1 = None
        if transport.get_extra_info("ssl_object").selected_alpn_protocol() != "h2":
            transport.close()
            return
        self.h2.initiate_connection()
        transport.write(self.h2.data_to_send())

    def connection_lost(self, exc):
        self.stand_in.protocols.discard(self)

    def data_received(self, data):
        if self.http1 is not None:
            self.http1_received(data)
            return
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.transport.write(self.h2.data_to_send())
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = {"headers": dict(event.headers), "body": bytearray()}
                self.open_streams += 1
            elif isinstance(event, h2.events.DataReceived):
                if event.stream_id in self.streams:
                    self.streams[event.stream_id]["body"] += event.data
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.request_complete(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                if self.streams.pop(event.stream_id, None) is not None:
                    self.open_streams -= 1
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.transport.close()
        self.transport.write(self.h2.data_to_send())

    def http1_received(self, data):
        """--http1: what a server that is not APNs (a proxy, a wrong URL) would do: answer 200 over HTTP/1.1."""
        self.http1 += data
        head, separator, body = bytes(self.http1).partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:\s*([0-9]+)", head)
        if separator and len(body) >= (int(length.group(1)) if length else 0):
            self.stand_in.record({"time": int(time.time() * 1000), "connection": self.id, "http1": head.split(b"\r\n")[0].decode()})
            self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            self.transport.close()

    def request_complete(self, stream_id):
        stream = self.streams.get(stream_id)
        if stream is None:
            return
        headers, body = stream["headers"], bytes(stream["body"])
        status, reason, token, claims = self.stand_in.answer(headers.get(":method"), headers.get(":path", ""), headers, body)
        try:
            payload = json.loads(body)
        except ValueError:
            payload = body.decode("utf-8", "replace")
        self.stand_in.record({
            "time": int(time.time() * 1000), "connection": self.id, "stream": stream_id, "openStreams": self.open_streams,
            "token": token, "apnsID": headers.get("apns-id"), "jwt": claims,
            "headers": {name: value for name, value in headers.items() if name != "authorization"},
            "payload": payload, "status": status, "reason": reason,
        })
        delay = self.stand_in.control().get("delayMillis", 0)
        response = (status, reason, headers.get("apns-id") or str(uuid.uuid4()).upper())
        if delay:
            asyncio.get_running_loop().call_later(delay / 1000, self.respond, stream_id, *response)
        else:
            self.respond(stream_id, *response)

    def respond(self, stream_id, status, reason, apns_id):
        if self.streams.pop(stream_id, None) is None or self.transport.is_closing():
            return
        self.open_streams -= 1
        response_headers = [(":status", str(status)), ("apns-id", apns_id)]
        body = b""
        if reason:
            document = {"reason": reason}
            if status == 410:
                document["timestamp"] = int(time.time() * 1000)
            body = json.dumps(document).encode()
            response_headers.append(("content-type", "application/json"))
            response_headers.append(("content-length", str(len(body))))
        if status == 429:
            response_headers.append(("retry-after", "3"))
        commanded = self.stand_in.control().get("answer") or {}
        if commanded.get("retryAfter") is not None and status == commanded.get("status"):
            response_headers = [h for h in response_headers if h[0] != "retry-after"]
            response_headers.append(("retry-after", str(commanded["retryAfter"])))
        try:
            self.h2.send_headers(stream_id, response_headers, end_stream=not body)
            if body:
                self.h2.send_data(stream_id, body, end_stream=True)
        except h2.exceptions.H2Error:
            return
        self.transport.write(self.h2.data_to_send())


async def main():
    parser = argparse.ArgumentParser(description="APNs stand-in (HTTP/2 over TLS) for Nimbus's tests")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--public-key", required=True)
    parser.add_argument("--key-id", required=True)
    parser.add_argument("--team-id", required=True)
    parser.add_argument("--topics", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log")
    parser.add_argument("--control")
    parser.add_argument("--http1", action="store_true", help="offer only http/1.1 by ALPN and answer 200 over it (not APNs)")
    options = parser.parse_args()

    make_certificates(options.state_dir)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(os.path.join(options.state_dir, "server.pem"), os.path.join(options.state_dir, "server.key"))
    context.set_alpn_protocols(["http/1.1"] if options.http1 else ["h2"])
    context.minimum_version = ssl.TLSVersion.TLSv1_2

    stand_in = StandIn(options)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(stand_in), "127.0.0.1", options.port, ssl=context, reuse_address=True)
    port = server.sockets[0].getsockname()[1]
    stopped = loop.create_future()
    # A parent may start us with signals blocked (a test runner's thread); SIGTERM must stop us at once.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, lambda: stopped.done() or stopped.set_result(None))
    print(f"apns-standin: listening on 127.0.0.1:{port}", flush=True)
    await stopped
    server.close()
    # Going down is abrupt, like a crashed or unreachable APNs: connections are dropped, not drained.
    for protocol in list(stand_in.protocols):
        protocol.transport.abort()
    await server.wait_closed()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except subprocess.CalledProcessError as error:
        sys.exit(f"apns-standin: openssl failed: {error.stderr.decode(errors='replace')}")
