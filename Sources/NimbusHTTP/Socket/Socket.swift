import Glibc

/// Thin wrappers over the socket system calls the server needs: EINTR retried, errors as values.
///
/// EBADF and EFAULT mean a programming error (a closed or invalid descriptor); they are reported
/// like any other errno rather than crashing the server, and logged by the caller.
package enum Socket {
    package struct Failure: Error, CustomStringConvertible {
        package var call: String
        package var errorNumber: Int32
        package var description: String { "\(call): \(String(cString: strerror(errorNumber)))" }
    }

    /// A listening, non-blocking TCP socket bound to `host:port` (port 0 picks a free one).
    package static func listen(host: String, port: Int, backlog: Int32) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw Failure(call: "getaddrinfo(\(host)): \(String(cString: gai_strerror(status)))", errorNumber: 0)
        }
        defer { freeaddrinfo(list) }
        var lastError = Failure(call: "bind", errorNumber: EADDRNOTAVAIL)
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let descriptor = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { lastError = Failure(call: "socket", errorNumber: errno); continue }
            var one: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            guard bind(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
                lastError = Failure(call: "bind \(host):\(port)", errorNumber: errno)
                close(descriptor)
                continue
            }
            guard Glibc.listen(descriptor, backlog) == 0 else {
                lastError = Failure(call: "listen", errorNumber: errno)
                close(descriptor)
                continue
            }
            try setNonBlocking(descriptor)
            return descriptor
        }
        throw lastError
    }

    /// Accepts one connection: the descriptor, nil when none is waiting (EAGAIN).
    package static func accept(_ listener: Int32) throws -> (descriptor: Int32, peer: PeerAddress)? {
        while true {
            // accept4 is not visible from Glibc in this toolchain: accept, then fcntl.
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let descriptor = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
            }
            if descriptor >= 0 {
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                try setNonBlocking(descriptor)
                var one: Int32 = 1
                setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return (descriptor, PeerAddress(storage))
            }
            switch errno {
            case EINTR, ECONNABORTED, EPROTO: continue
            case EAGAIN, EWOULDBLOCK: return nil
            default: throw Failure(call: "accept", errorNumber: errno)
            }
        }
    }

    package static func setNonBlocking(_ descriptor: Int32) throws {
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw Failure(call: "fcntl(O_NONBLOCK)", errorNumber: errno)
        }
    }

    /// Outcome of a non-blocking read or write.
    package enum IOResult: Equatable {
        case bytes(Int)
        case wouldBlock
        case closed
        case failed(Int32)
    }

    /// Reads and drops what the peer sent that nobody will read, before a close that does not
    /// linger (a timeout with no answer, a broken answer): closing a socket with unread input
    /// makes the kernel send a reset and drop output not yet sent. Bounded: at most 256 KiB, and
    /// never waits.
    static func discardInput(_ descriptor: Int32) {
        var scratch = [UInt8](repeating: 0, count: 16_384)
        for _ in 0..<16 {
            let count = scratch.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count <= 0 { return }
        }
    }

    package static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET: return .closed
            default: return .failed(errno)
            }
        }
    }

    /// Sends without SIGPIPE (MSG_NOSIGNAL); a peer that went away is `.closed`.
    package static func send(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer) -> IOResult {
        sending { Glibc.send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends two buffers in one call (`sendmsg` with two pieces), as if they were one.
    package static func send(_ descriptor: Int32, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> IOResult {
        var pieces = [iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
                      iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count)]
        return pieces.withUnsafeMutableBufferPointer { pieces in
            var message = msghdr()
            message.msg_iov = pieces.baseAddress
            message.msg_iovlen = pieces.count
            return sending { sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL)) }
        }
    }

    /// A send call's count as an `IOResult`, the call repeated when a signal interrupted it.
    private static func sending(_ call: () -> Int) -> IOResult {
        while true {
            let count = call()
            if count >= 0 { return .bytes(count) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EPIPE, ECONNRESET: return .closed
            default: return .failed(errno)
            }
        }
    }

    /// The address a socket is bound to, as `host:port` (IPv6 hosts in brackets).
    package static func localAddress(_ descriptor: Int32) -> (host: String, port: Int)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard status == 0 else { return nil }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let lookup = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard lookup == 0 else { return nil }
        let hostText = String(cString: host)
        return (hostText.contains(":") ? "[\(hostText)]" : hostText, Int(String(cString: service)) ?? 0)
    }

    /// Raises the soft open-file limit to the hard limit (10,000 connections need descriptors).
    package static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(limit.rlim_cur)
    }
}
