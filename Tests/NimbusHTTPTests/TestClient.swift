import Foundation
import Glibc
@testable import NimbusHTTP

/// A blocking loopback client for server tests: raw bytes out, parsed responses in.
final class TestClient {
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let descriptor: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 10) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else { throw Failure(description: "connect failed: \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    private var closed = false

    /// Closes the socket now (once: `deinit` then leaves it alone, so a descriptor number another
    /// test's socket has taken meanwhile is never closed under it).
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(descriptor)
    }

    deinit { close() }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "send failed: \(errno)") }
            offset += count
        }
    }

    /// Reads more bytes; false on EOF, throws on timeout.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(descriptor, &chunk, chunk.count, 0)
        if count > 0 {
            buffer += chunk[0..<count]
            return true
        }
        if count == 0 { return false }
        throw Failure(description: errno == EAGAIN ? "timed out waiting for the server" : "recv failed: \(errno)")
    }

    private func readLine() throws -> String {
        while true {
            if let index = buffer.firstIndex(of: 10), index > 0, buffer[index - 1] == 13 {
                let line = String(decoding: buffer[0..<(index - 1)], as: UTF8.self)
                buffer.removeFirst(index + 1)
                return line
            }
            guard try fill() else { throw Failure(description: "connection closed mid-line") }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw Failure(description: "connection closed mid-body") }
        }
        let bytes = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return bytes
    }

    /// Reads one response; `head` requests have no body whatever the headers say.
    func readResponse(head: Bool = false) throws -> Response {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure(description: "bad status line \(statusLine)") }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw Failure(description: "bad header \(line)") }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = Response(status: status, headers: headers, body: [])
        if head || status == 100 || status == 304 || status == 204 { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine()
                guard let size = Int(sizeLine, radix: 16) else { throw Failure(description: "bad chunk size \(sizeLine)") }
                if size == 0 { _ = try readLine(); break }
                response.body += try readExactly(size)
                _ = try readLine()
            }
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = try readExactly(length)
        } else {
            while try fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// True when the server closed the connection (EOF) within the receive timeout.
    func isClosedByServer() -> Bool {
        guard buffer.isEmpty else { return false }
        do { return try !fill() } catch { return false }
    }
}
