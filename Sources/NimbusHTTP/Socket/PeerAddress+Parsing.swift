import Glibc

extension PeerAddress {
    /// An address written as text: `192.0.2.7` or `2001:db8::1`; nil for anything else.
    package init?(parsing text: some StringProtocol) {
        let text = String(text)
        var storage = sockaddr_storage()
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            withUnsafeMutableBytes(of: &storage) { raw in
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_addr = v4
                raw.storeBytes(of: address, as: sockaddr_in.self)
            }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            withUnsafeMutableBytes(of: &storage) { raw in
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_addr = v6
                raw.storeBytes(of: address, as: sockaddr_in6.self)
            }
        } else {
            return nil
        }
        self.init(storage)
    }

    /// The address's bytes in network order: 4 for IPv4 (also for an IPv4-mapped IPv6 address,
    /// as a dual-stack listener reports IPv4 peers), 16 for IPv6, none when unknown.
    package var bytes: [UInt8] {
        let raw = rawBytes
        if raw.count == 16, raw[0..<10].allSatisfy({ $0 == 0 }), raw[10] == 0xFF, raw[11] == 0xFF {
            return Array(raw[12...])
        }
        return raw
    }
}
