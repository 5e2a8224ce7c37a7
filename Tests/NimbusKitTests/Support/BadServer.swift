import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A server that answers every request badly: garbage bytes, a 500 that is not Nimbus's error
/// shape, or a proxy's HTML 502.
final class BadServer: @unchecked Sendable {
    enum Answer: Sendable, CustomStringConvertible {
        case garbage, internalError, htmlBadGateway

        var bytes: [UInt8] {
            switch self {
            case .garbage:
                return Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{\"recor\u{1}".utf8)
            case .internalError:
                return Array("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nConnection: close\r\n\r\noops!".utf8)
            case .htmlBadGateway:
                let body = "<html><body>502 Bad Gateway</body></html>"
                return Array("HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
            }
        }

        var description: String {
            switch self {
            case .garbage: return "garbage"
            case .internalError: return "500"
            case .htmlBadGateway: return "502"
            }
        }
    }

    private let upstream: Int32
    private let lock = NSLock()
    private var stopped = false

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
    let port: Int

    init(answer: Answer) throws {
        // A listener that answers each connection with the canned bytes.
        (upstream, port) = try ChaosProxy.loopbackListener()
        let bytes = answer.bytes
        Thread { [weak self] in self?.serve(bytes) }.start()
    }

    private func serve(_ bytes: [UInt8]) {
        while true {
            var pfd = pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 200)
            if lock.withLock({ stopped }) { close(upstream); return }
            guard ready > 0 else { continue }
            let client = accept(upstream, nil, nil)
            guard client >= 0 else { continue }
            var request = [UInt8](repeating: 0, count: 65536)
            _ = read(client, &request, request.count)
            _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
            shutdown(client, Int32(SHUT_RDWR))
            close(client)
        }
    }

    func stop() { lock.withLock { stopped = true } }
}
