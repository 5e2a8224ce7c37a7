import Glibc

/// The address of a connection's peer, kept as bytes (formatted only when asked for).
package struct PeerAddress: Sendable, Hashable, CustomStringConvertible {
    /// IPv4 in the low 32 bits of `low` (`high` 0), or the 16 bytes of IPv6; network order.
    private var high: UInt64 = 0
    private var low: UInt64 = 0
    private var family: Int32 = 0

    package static let unknown = PeerAddress()

    package init() {}

    /// The address in a `sockaddr_storage` filled by `accept`.
    init(_ storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            low = UInt64(address.sin_addr.s_addr)
            family = AF_INET
        case AF_INET6:
            let address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            withUnsafeBytes(of: address.sin6_addr) { bytes in
                high = bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
                low = bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            }
            family = AF_INET6
        default:
            break
        }
    }

    /// The stored bytes in network order (4 or 16; none when unknown).
    var rawBytes: [UInt8] {
        switch family {
        case AF_INET:
            return withUnsafeBytes(of: UInt32(truncatingIfNeeded: low)) { Array($0) }
        case AF_INET6:
            return withUnsafeBytes(of: (high, low)) { Array($0) }
        default:
            return []
        }
    }

    /// `127.0.0.1`, `::1`, or `unknown` (a Unix socket, or not known).
    package var description: String {
        if family == AF_INET {
            // Written here: inet_ntop's sprintf was a tenth of a small request's CPU (every
            // request's log entry names its client).
            var text = ""
            text.reserveCapacity(15)
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: low)) { octets in
                for (index, octet) in octets.enumerated() {
                    if index > 0 { text.append(".") }
                    text.append(String(octet))
                }
            }
            return text
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch family {
        case AF_INET:
            var address = in_addr(s_addr: in_addr_t(truncatingIfNeeded: low))
            guard inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)) != nil else { return "unknown" }
        case AF_INET6:
            var words = (high, low)
            let formatted = withUnsafeBytes(of: &words) { bytes in
                inet_ntop(AF_INET6, bytes.baseAddress, &buffer, socklen_t(buffer.count))
            }
            guard formatted != nil else { return "unknown" }
        default:
            return "unknown"
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
