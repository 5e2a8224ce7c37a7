/// A block of addresses written in CIDR notation: `10.0.0.0/8`, `127.0.0.1` (one address),
/// `fd00::/8`.
package struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    private let prefix: [UInt8]
    private let bits: Int

    /// Parses `ADDRESS[/BITS]`; nil when either part is not valid.
    package init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = PeerAddress(parsing: parts[0]) else { return nil }
        let bytes = address.bytes
        let width = bytes.count * 8
        var bits = width
        if parts.count == 2 {
            guard let value = Int(parts[1]), (0...width).contains(value), parts[1].allSatisfy(\.isASCII) else { return nil }
            bits = value
        }
        self.bits = bits
        prefix = Self.masked(bytes, bits: bits)
    }

    /// True when `address` is inside the block (an IPv4-mapped IPv6 address counts as IPv4).
    package func contains(_ address: PeerAddress) -> Bool {
        let bytes = address.bytes
        return bytes.count == prefix.count && Self.masked(bytes, bits: bits) == prefix
    }

    package var description: String {
        let address = prefix.count == 4
            ? prefix.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(prefix[$0]) << 8 | UInt16(prefix[$0 + 1]), radix: 16) }.joined(separator: ":")
        return "\(address)/\(bits)"
    }

    private static func masked(_ bytes: [UInt8], bits: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(max(bits - index * 8, 0), 8)
            return kept == 8 ? byte : byte & ~(0xFF >> kept)
        }
    }
}

/// Where a request really came from, as told by proxies the server trusts.
package struct ForwardedOrigin: Sendable, Hashable {
    /// The client's address (`192.0.2.7`), or an obfuscated identifier a proxy sent (`_hidden`).
    package var client: String
    /// `https` or `http`, when a trusted proxy said.
    package var scheme: String?
    /// The host (and port) the client asked for, when a trusted proxy said.
    package var host: String?

    package init(client: String, scheme: String? = nil, host: String? = nil) {
        self.client = client
        self.scheme = scheme
        self.host = host
    }
}

/// The proxies whose `Forwarded` / `X-Forwarded-*` headers are believed (`--trusted-proxy`).
///
/// Only when the connection's peer is inside a trusted range: the client is found by walking the
/// forwarding chain from the nearest hop back, skipping addresses that are themselves trusted; the
/// first one that is not is the client (a client may write anything to the left of it, so nothing
/// further left counts). All trusted: the leftmost. `Forwarded` (RFC 7239) wins over `X-Forwarded-For`
/// when both are present.
package struct TrustedProxies: Sendable {
    package let ranges: [AddressRange]

    package init(_ ranges: [AddressRange] = []) {
        self.ranges = ranges
    }

    package var isEmpty: Bool { ranges.isEmpty }

    package func trusts(_ address: PeerAddress) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    /// The origin the headers describe, or nil when the peer is not trusted or they say nothing.
    package func origin(peer: PeerAddress, headers: HTTPHeaders) -> ForwardedOrigin? {
        guard !ranges.isEmpty, trusts(peer) else { return nil }
        let hops = Self.forwardedHops(headers) ?? Self.xForwardedHops(headers)
        guard !hops.isEmpty else { return nil }
        var chosen = hops[0]
        for hop in hops.reversed() {
            if let address = PeerAddress(parsing: hop.client), trusts(address) { continue }
            chosen = hop
            break
        }
        let client = chosen.client.isEmpty ? peer.description : Self.printable(chosen.client)
        return ForwardedOrigin(client: client, scheme: chosen.scheme, host: chosen.host)
    }

    /// One hop of the chain: the address it forwarded for, and what it said of the request.
    struct Hop: Equatable {
        var client: String
        var scheme: String?
        var host: String?
    }

    /// `Forwarded: for=192.0.2.7;proto=https;host=sync.example.org, for="[2001:db8::1]:4711"`.
    static func forwardedHops(_ headers: HTTPHeaders) -> [Hop]? {
        let values = headers.values(for: "Forwarded")
        guard !values.isEmpty else { return nil }
        var hops: [Hop] = []
        for element in values.flatMap({ $0.split(separator: ",") }) {
            var hop = Hop(client: "unknown")
            for pair in element.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let name = parts[0].trimmingASCIIWhitespace().lowercased()
                var value = String(parts[1].trimmingASCIIWhitespace())
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                switch name {
                case "for": hop.client = Self.address(value)
                case "proto": hop.scheme = Self.scheme(value)
                case "host": hop.host = Self.host(value)
                default: break
                }
            }
            hops.append(hop)
        }
        return hops
    }

    /// `X-Forwarded-For: client, proxy1` with `X-Forwarded-Proto` / `X-Forwarded-Host`, which
    /// describe the request as the nearest proxy received it (their last value).
    static func xForwardedHops(_ headers: HTTPHeaders) -> [Hop] {
        let clients = headers.values(for: "X-Forwarded-For").flatMap { $0.split(separator: ",") }
            .map { Self.address(String($0.trimmingASCIIWhitespace())) }
        let scheme = Self.lastValue(headers, "X-Forwarded-Proto").flatMap(Self.scheme)
        let host = Self.lastValue(headers, "X-Forwarded-Host").flatMap(Self.host)
        guard !clients.isEmpty else {
            // A proxy that says only the scheme or host: the client is the peer itself (`origin`).
            return scheme == nil && host == nil ? [] : [Hop(client: "", scheme: scheme, host: host)]
        }
        return clients.map { Hop(client: $0, scheme: scheme, host: host) }
    }

    private static func lastValue(_ headers: HTTPHeaders, _ name: String) -> String? {
        headers.values(for: name).flatMap { $0.split(separator: ",") }.last.map { String($0.trimmingASCIIWhitespace()) }
    }

    /// An address without its port or brackets (`[2001:db8::1]:4711` → `2001:db8::1`,
    /// `192.0.2.7:80` → `192.0.2.7`); other tokens (`unknown`, `_hidden`) as written.
    static func address(_ text: String) -> String {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            return String(text[text.index(after: text.startIndex)..<close])
        }
        if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            return String(text[..<colon])
        }
        return text
    }

    /// An address as it goes into logs and throttle keys: an identifier that is not an address
    /// (`_hidden`) is kept when short and plain, anything else reads `unknown`.
    private static func printable(_ client: String) -> String {
        if PeerAddress(parsing: client) != nil { return client }
        let plain = client.utf8.count <= 64 && client.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") }
        return plain && !client.isEmpty ? client : "unknown"
    }

    private static func scheme(_ text: String) -> String? {
        let lowered = text.lowercased()
        return lowered == "https" || lowered == "http" ? lowered : nil
    }

    /// A host[:port] made only of characters a host may have, so that it can go into a URL.
    private static func host(_ text: String) -> String? {
        let allowed = text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ":")
                || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")
        }
        return allowed && !text.isEmpty && text.utf8.count <= 255 ? text : nil
    }
}
