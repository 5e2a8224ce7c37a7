import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A server that answers every request badly: garbage bytes, a 500 that is not Nimbus's error
/// shape, a proxy's HTML 502, a body that never ends, or a Content-Length of a terabyte (the last
/// two answer `GET /limits` properly, with the defaults).
final class BadServer: @unchecked Sendable {
    enum Answer: Sendable, CustomStringConvertible {
        case garbage, internalError, htmlBadGateway, endless, hugeContentLength

        var bytes: [UInt8] {
            switch self {
            case .garbage:
                return Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{\"recor\u{1}".utf8)
            case .internalError:
                return Array("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nConnection: close\r\n\r\noops!".utf8)
            case .htmlBadGateway:
                let body = "<html><body>502 Bad Gateway</body></html>"
                return Array("HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
            case .endless:
                return Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"records\":[".utf8)
            case .hugeContentLength:
                return Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000000000\r\nConnection: close\r\n\r\n{\"records\":[".utf8)
            }
        }

        /// After `bytes`: 64 KiB of blanks every millisecond (64 MB/s, a fast network), until
        /// the client goes away.
        var isEndless: Bool {
            switch self {
            case .endless, .hugeContentLength: true
            default: false
            }
        }

        var description: String {
            switch self {
            case .garbage: return "garbage"
            case .internalError: return "500"
            case .htmlBadGateway: return "502"
            case .endless: return "endless"
            case .hugeContentLength: return "huge Content-Length"
            }
        }
    }

    private let upstream: Int32
    private let lock = NSLock()
    private var stopped = false
    private var sent = 0

    /// Body bytes written so far to all clients (an endless answer stops when its client leaves).
    var bytesSent: Int { lock.withLock { sent } }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
    let port: Int

    init(answer: Answer) throws {
        // A listener that answers each connection with the canned bytes.
        (upstream, port) = try ChaosProxy.loopbackListener()
        Thread { [weak self] in self?.serve(answer) }.start()
    }

    private func serve(_ answer: Answer) {
        let bytes = answer.bytes
        while true {
            var pfd = pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 200)
            if lock.withLock({ stopped }) { close(upstream); return }
            guard ready > 0 else { continue }
            let client = accept(upstream, nil, nil)
            guard client >= 0 else { continue }
            var request = [UInt8](repeating: 0, count: 65536)
            let count = read(client, &request, request.count)
            let isLimits = count > 0 && String(decoding: request[0..<count], as: UTF8.self).hasPrefix("GET /limits ")
            if answer.isEndless && !isLimits {
                Thread { [weak self] in self?.stream(bytes, to: client) }.start()
                continue
            }
            let reply = isLimits ? Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".utf8) : bytes
            _ = reply.withUnsafeBytes { send(client, $0.baseAddress, reply.count, Int32(MSG_NOSIGNAL)) }
            shutdown(client, Int32(SHUT_RDWR))
            close(client)
        }
    }

    private func stream(_ head: [UInt8], to client: Int32) {
        defer { close(client) }
        guard head.withUnsafeBytes({ send(client, $0.baseAddress, head.count, Int32(MSG_NOSIGNAL)) }) == head.count else { return }
        let blanks = [UInt8](repeating: UInt8(ascii: " "), count: 64 << 10)
        while !lock.withLock({ stopped }) {
            let written = blanks.withUnsafeBytes { send(client, $0.baseAddress, blanks.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return }   // the client went away
            lock.withLock { sent += written }
            usleep(1000)
        }
    }

    func stop() { lock.withLock { stopped = true } }
}
