/// Bytes queued for a socket, sent in order; what the socket does not take waits for room.
struct OutboundBuffer {
    private var bytes: [UInt8] = []
    /// How many of `bytes` are on the wire already.
    private var sent = 0

    enum FlushResult: Equatable {
        /// Everything is on the wire.
        case drained
        /// The socket is full: the rest waits for EPOLLOUT.
        case blocked
        /// The peer is gone.
        case failed
    }

    /// Nothing is queued.
    var isEmpty: Bool { bytes.isEmpty }
    var unsentCount: Int { bytes.count - sent }

    mutating func append(contentsOf newBytes: some Sequence<UInt8>) {
        bytes.append(contentsOf: newBytes)
    }

    /// Lets `write` append to the queued bytes in place (a response head encoder).
    mutating func append(_ write: (inout [UInt8]) -> Void) {
        write(&bytes)
    }

    /// One chunk of a chunked body (RFC 9112 §7.1): its size in hex, CRLF, the bytes, CRLF.
    mutating func appendChunk(_ chunk: [UInt8]) {
        bytes.append(contentsOf: String(chunk.count, radix: 16).utf8)
        bytes.append(contentsOf: [13, 10])
        bytes.append(contentsOf: chunk)
        bytes.append(contentsOf: [13, 10])
    }

    /// The last chunk and the empty trailer section that end a chunked body.
    mutating func appendLastChunk() {
        bytes.append(contentsOf: "0\r\n\r\n".utf8)
    }

    /// Writes what the socket takes.
    mutating func flush(to descriptor: Int32) -> FlushResult {
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                Socket.send(descriptor, UnsafeRawBufferPointer(rebasing: buffer[sent...]))
            }
            switch result {
            case .bytes(let count):
                sent += count
            case .wouldBlock:
                return .blocked
            case .closed, .failed:
                return .failed
            }
        }
        bytes.removeAll(keepingCapacity: bytes.count <= 4096)
        sent = 0
        return .drained
    }

    /// Sends the queued bytes (a response head, with nothing before it) and then `body` from where
    /// it lies, in one call: only what the socket leaves is queued, the body itself rather than a
    /// copy unless the head did not fit.
    mutating func flush(thenBody body: [UInt8], to descriptor: Int32) -> FlushResult {
        let result = bytes.withUnsafeBytes { head in body.withUnsafeBytes { Socket.send(descriptor, head, $0) } }
        switch result {
        case .bytes(let count) where count >= bytes.count:
            sent = count - bytes.count
            bytes = body
        case .bytes(let count):
            sent = count
            bytes.append(contentsOf: body)
        case .wouldBlock:
            bytes.append(contentsOf: body)
        case .closed, .failed:
            return .failed
        }
        return flush(to: descriptor)
    }

    /// Drops everything (the connection closed).
    mutating func discard() {
        bytes = []
        sent = 0
    }
}
