#!/usr/bin/env python3
"""A TCP relay on 127.0.0.1 that breaks the first large request body it carries, once.

    upload-relay.py MODE FRACTION UPSTREAM_PORT STATUS_FILE

Prints its port on the first line of stdout, then forwards every connection to
127.0.0.1:UPSTREAM_PORT. The first request whose body is at least 1 MiB (an asset upload) is
interfered with after FRACTION of its body:
  cut    both connections are closed there (a network drop mid-upload);
  stall  the rest of the body is read from the client and dropped, never forwarded, while
         answers still flow back (the server's body timeout answers 408 through the relay).
A chunked request body (a sealed upload from Linux, whose length is not known ahead) counts as
large once 1 MiB of it has passed, and is interfered with there (FRACTION does not apply).
Everything after that passes untouched. STATUS_FILE holds `connections uploads triggered chunked`
(uploads: request bodies of at least 1 MiB seen; chunked: those of them that were chunked),
rewritten on every change, so that a test can tell the interference happened. Used by
Tests/NimbusKitTests/SyncEngineFailureTests.swift and Encryption/SealedUploadTests.swift.
"""
import signal
import socket
import sys
import threading

# A child of a test process may inherit its blocked signals: SIGTERM and SIGINT end this relay.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

MODE, FRACTION, UPSTREAM, STATUS = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
LARGE = 1 << 20
lock = threading.Lock()
counts = {"connections": 0, "uploads": 0, "triggered": 0, "chunked": 0}


def note(key):
    with lock:
        counts[key] += 1
        with open(STATUS, "w") as out:
            out.write("%d %d %d %d\n" % (counts["connections"], counts["uploads"], counts["triggered"], counts["chunked"]))


def claim_trigger():
    with lock:
        return counts["triggered"] == 0


def close(*sockets):
    for s in sockets:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def answers(server, client):
    try:
        while True:
            data = server.recv(65536)
            if not data:
                break
            client.sendall(data)
    except OSError:
        pass
    close(client, server)


class Chunked:
    """Follows a chunked body (RFC 9112 §7.1) through the bytes given to it: where it ends."""

    def __init__(self):
        self.line = b""   # the size line (or a trailer line) being read
        self.left = 0     # data bytes of the current chunk still to come
        self.crlf = 0     # bytes of the CRLF after a chunk's data still to come
        self.trailer = False
        self.done = False

    def take(self, data):
        """How many bytes of data belong to the body (all of them unless it ends inside)."""
        used = 0
        while used < len(data) and not self.done:
            if self.left:
                step = min(self.left, len(data) - used)
                self.left -= step
                used += step
                if not self.left:
                    self.crlf = 2
            elif self.crlf:
                step = min(self.crlf, len(data) - used)
                self.crlf -= step
                used += step
            else:
                end = data.find(b"\n", used)
                if end < 0:
                    self.line += data[used:]
                    return len(data)
                self.line += data[used:end + 1]
                used = end + 1
                line, self.line = self.line.strip(), b""
                if self.trailer:
                    self.done = not line
                else:
                    size = int(line.split(b";")[0], 16)
                    if size:
                        self.left = size
                    else:
                        self.trailer = True
        return used


def requests(client, server):
    """Forwards request bytes, following heads and Content-Length or chunked bodies to find large ones."""
    head = b""
    left = 0          # body bytes of the current request still to come
    chunked = None    # the current request's chunked body, when it has one
    trigger_at = -1   # body bytes after which to interfere (-1: not this request)
    seen = 0          # body bytes of the current request seen so far
    dropping = False  # stalled: read and drop everything from now on
    try:
        while True:
            data = client.recv(65536)
            if not data:
                server.shutdown(socket.SHUT_WR)
                return
            if dropping:
                continue
            while data:
                if left == 0 and chunked is None:
                    head += data
                    end = head.find(b"\r\n\r\n")
                    if end < 0:
                        data = b""
                        break
                    text, data = head[:end + 4], head[end + 4:]
                    head = b""
                    server.sendall(text)
                    length = 0
                    for line in text.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value.strip())
                        if name.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower():
                            chunked = Chunked()
                    left, seen, trigger_at = length, 0, -1
                    if length >= LARGE:
                        note("uploads")
                        if claim_trigger():
                            note("triggered")
                            trigger_at = int(length * FRACTION)
                    continue
                if chunked is not None:
                    take = chunked.take(data)
                    piece, data = data[:take], data[take:]
                    if seen < LARGE <= seen + len(piece):
                        note("uploads")
                        note("chunked")
                        if claim_trigger():
                            note("triggered")
                            trigger_at = LARGE
                    if chunked.done:
                        chunked = None
                else:
                    piece = data[:left]
                    data = data[left:]
                    left -= len(piece)
                if trigger_at >= 0 and seen + len(piece) >= trigger_at:
                    server.sendall(piece[:trigger_at - seen])
                    if MODE == "cut":
                        close(client, server)
                        return
                    dropping = True
                    data = b""
                    break
                server.sendall(piece)
                seen += len(piece)
    except OSError:
        close(client, server)


def serve(client):
    note("connections")
    server = socket.create_connection(("127.0.0.1", UPSTREAM))
    threading.Thread(target=answers, args=(server, client), daemon=True).start()
    requests(client, server)


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
with open(STATUS, "w") as status:
    status.write("0 0 0 0\n")
print(listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
