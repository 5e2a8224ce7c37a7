import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on 127.0.0.1 in front of a test server that misbehaves on demand: it drops
/// answers (after the server has done the work), goes offline, or corrupts answer bodies. This is
/// how the tests lose answers and networks without mocking anything.
final class ChaosProxy: @unchecked Sendable {
    enum Mode: Sendable, Equatable {
        case pass
        /// Each answer chunk is dropped with this probability: the connection is cut instead.
        case dropAnswers(probability: Double)
        /// Every connection is refused (accepted and closed at once), and open ones are cut.
        case offline
        /// Answer bodies have one byte flipped.
        case corruptBodies
        /// An answer whose Content-Length passes `over` bytes: its head and the body's next read
        /// pass, then nothing more until the mode changes (or the proxy stops), when the
        /// connection is cut: a download stalled mid-way. Smaller answers pass.
        case stallBodies(over: Int)
    }

    // Safe: `mode`, `sockets` and `stopped` are only touched under `lock`.
    private let lock = NSLock()
    private var mode: Mode = .pass
    private var sockets: Set<Int32> = []
    private var stopped = false
    private let listener: Int32
    let port: Int
    let upstreamPort: Int
    private(set) var droppedAnswers = 0

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        (listener, port) = try ChaosProxy.loopbackListener()
        let thread = Thread { [weak self] in self?.acceptLoop() }
        thread.start()
    }

    /// A listening socket on 127.0.0.1 and a free port.
    static func loopbackListener() throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw TestFailure("bind/listen on 127.0.0.1 failed")
        }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: local.sin_port)))
    }

    func setMode(_ newMode: Mode) {
        let open: Set<Int32> = lock.withLock {
            mode = newMode
            return newMode == .offline ? sockets : []
        }
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    var dropped: Int { lock.withLock { droppedAnswers } }

    func stop() {
        let open: Set<Int32> = lock.withLock {
            stopped = true
            return sockets
        }
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit { stop() }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 200)
            if lock.withLock({ stopped }) { close(listener); return }
            guard ready > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            if lock.withLock({ mode }) == .offline {
                close(client)
                continue
            }
            Thread { [weak self] in self?.serve(client) }.start()
        }
    }

    private func serve(_ client: Int32) {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = ChaosProxy.loopback(port: upstreamPort)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(upstream); close(client); return }
        lock.withLock { sockets.formUnion([client, upstream]) }
        let requests = Thread { ChaosProxy.pump(from: client, to: upstream) }
        requests.start()
        answers(from: upstream, to: client)
        lock.withLock { sockets.subtract([client, upstream]) }
        shutdown(client, Int32(SHUT_RDWR))
        shutdown(upstream, Int32(SHUT_RDWR))
        // The request pump ends on the shutdown; give it a moment before the descriptors go.
        Thread.sleep(forTimeInterval: 0.05)
        close(client)
        close(upstream)
    }

    private static func pump(from source: Int32, to target: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(source, &buffer, buffer.count)
            if count <= 0 { shutdown(target, Int32(SHUT_WR)); return }
            if !writeAll(target, buffer, count) { return }
        }
    }

    private func answers(from upstream: Int32, to client: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var inBody = false
        var passedBodyChunk = false  // `.stallBodies`: one read of the body passes before the stall
        while true {
            let count = read(upstream, &buffer, buffer.count)
            if count <= 0 { return }
            switch lock.withLock({ mode }) {
            case .dropAnswers(let probability) where Double.random(in: 0..<1) < probability:
                lock.withLock { droppedAnswers += 1 }
                return  // the server did the work; the client never hears of it
            case .offline:
                return
            case .corruptBodies:
                if !inBody, let end = ChaosProxy.headerEnd(buffer, count) {
                    inBody = true
                    if end < count { buffer[count - 1] ^= 0xFF }
                } else if inBody {
                    buffer[count - 1] ^= 0xFF
                }
            case .stallBodies(let over):
                if inBody && passedBodyChunk {
                    while lock.withLock({ mode == .stallBodies(over: over) && !stopped }) { Thread.sleep(forTimeInterval: 0.05) }
                    return
                }
                if inBody {
                    passedBodyChunk = true
                } else if let end = ChaosProxy.headerEnd(buffer, count) {
                    let head = String(decoding: buffer[0..<end], as: UTF8.self).lowercased()
                    let length = head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) }
                    inBody = (length ?? 0) > over
                }
            default:
                break
            }
            if !ChaosProxy.writeAll(client, buffer, count) { return }
        }
    }

    private static func headerEnd(_ buffer: [UInt8], _ count: Int) -> Int? {
        guard count >= 4 else { return nil }
        for i in 0...(count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    private static func writeAll(_ fd: Int32, _ buffer: [UInt8], _ count: Int) -> Bool {
        var offset = 0
        while offset < count {
            let written = buffer.withUnsafeBytes { send(fd, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }
}
