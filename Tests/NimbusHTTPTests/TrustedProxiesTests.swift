import NimbusHTTP
import Testing

@Suite struct TrustedProxiesTests {
    private func headers(_ fields: [(String, String)]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for (name, value) in fields { headers.add(name: name, value: value) }
        return headers
    }

    private func address(_ text: String) -> PeerAddress {
        guard let address = PeerAddress(parsing: text) else {
            Issue.record("\(text) does not parse")
            return .unknown
        }
        return address
    }

    private let loopback = TrustedProxies([AddressRange("127.0.0.1/32"), AddressRange("10.0.0.0/8")].compactMap { $0 })

    @Test func addressesPrintAsTheyParse() {
        for text in ["0.0.0.0", "127.0.0.1", "10.20.30.40", "255.255.255.255", "192.168.0.9", "::1", "2001:db8::7"] {
            #expect(address(text).description == text)
        }
        #expect(PeerAddress.unknown.description == "unknown")
    }

    @Test func rangesParseAndMatchAtTheirEdges() throws {
        let range = try #require(AddressRange("10.1.0.0/16"))
        #expect(range.contains(address("10.1.255.255")))
        #expect(range.contains(address("10.1.0.0")))
        #expect(!range.contains(address("10.2.0.0")))
        #expect(!range.contains(address("10.0.255.255")))
        #expect(range.description == "10.1.0.0/16")
        // Host bits are masked off; one address without a length; zero bits is everything.
        #expect(AddressRange("10.1.2.3/16")?.description == "10.1.0.0/16")
        #expect(AddressRange("127.0.0.1")?.contains(address("127.0.0.1")) == true)
        #expect(AddressRange("127.0.0.1")?.contains(address("127.0.0.2")) == false)
        #expect(AddressRange("0.0.0.0/0")?.contains(address("203.0.113.9")) == true)
        let v6 = try #require(AddressRange("fd00::/8"))
        #expect(v6.contains(address("fd12:3456::1")))
        #expect(!v6.contains(address("fe80::1")))
        #expect(!v6.contains(address("10.0.0.1")), "an IPv4 address is never inside an IPv6 block")
        // A dual-stack listener reports IPv4 peers as IPv4-mapped IPv6.
        #expect(AddressRange("127.0.0.0/8")?.contains(address("::ffff:127.0.0.5")) == true)
        for bad in ["", "10.0.0.0/33", "fd00::/129", "10.0.0.0/-1", "10.0.0.0/", "example.org", "10.0.0/8", "10.0.0.0/8/8", "10.0.0.0/ 8"] {
            #expect(AddressRange(bad) == nil, "\(bad) should not parse")
        }
    }

    @Test func theNearestUntrustedHopIsTheClient() {
        // nginx appends the address it saw: what the client wrote on its left is not believed.
        let origin = loopback.origin(peer: address("127.0.0.1"), headers: headers([
            ("X-Forwarded-For", "6.6.6.6, 203.0.113.9, 10.0.0.7"), ("X-Forwarded-Proto", "https"), ("Host", "a")]))
        #expect(origin == ForwardedOrigin(client: "203.0.113.9", scheme: "https", host: nil))
        // Every hop trusted: the leftmost.
        #expect(loopback.origin(peer: address("127.0.0.1"), headers: headers([("X-Forwarded-For", "10.0.0.1, 10.0.0.2")]))?.client == "10.0.0.1")
        // Several header lines are one list, in order.
        #expect(loopback.origin(peer: address("127.0.0.1"), headers: headers([
            ("X-Forwarded-For", "203.0.113.1"), ("X-Forwarded-For", "198.51.100.2")]))?.client == "198.51.100.2")
    }

    @Test func anUntrustedPeerIsBelievedInNothing() {
        let spoofed = headers([("X-Forwarded-For", "10.0.0.1"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "evil.example"),
                               ("Forwarded", "for=10.0.0.1;proto=https;host=evil.example")])
        #expect(loopback.origin(peer: address("203.0.113.9"), headers: spoofed) == nil)
        #expect(TrustedProxies().origin(peer: address("127.0.0.1"), headers: spoofed) == nil, "no trusted proxy by default")
        #expect(loopback.origin(peer: address("127.0.0.1"), headers: headers([("Host", "a")])) == nil, "no forwarding headers")
    }

    @Test func forwardedWinsAndCarriesSchemeAndHostPerHop() {
        let origin = loopback.origin(peer: address("127.0.0.1"), headers: headers([
            ("X-Forwarded-For", "198.51.100.1"),
            ("Forwarded", #"for="[2001:db8::7]:4711";proto=https;host="sync.example.org:8443", for=10.0.0.3;proto=http"#)]))
        #expect(origin == ForwardedOrigin(client: "2001:db8::7", scheme: "https", host: "sync.example.org:8443"))
        let port = loopback.origin(peer: address("127.0.0.1"), headers: headers([("Forwarded", "For=192.0.2.60:8080;Proto=HTTPS")]))
        #expect(port == ForwardedOrigin(client: "192.0.2.60", scheme: "https", host: nil))
    }

    @Test func oddValuesAreNeitherTrustedNorCopiedIntoURLs() {
        let origin = loopback.origin(peer: address("127.0.0.1"), headers: headers([
            ("Forwarded", "for=_hidden;proto=gopher;host=\"a b/c\"")]))
        #expect(origin == ForwardedOrigin(client: "_hidden", scheme: nil, host: nil))
        let long = String(repeating: "x", count: 65)
        #expect(loopback.origin(peer: address("127.0.0.1"), headers: headers([("X-Forwarded-For", long)]))?.client == "unknown")
        // Only a scheme and a host, no address: the client is the peer, the URL parts count.
        let bare = loopback.origin(peer: address("127.0.0.1"), headers: headers([("X-Forwarded-Proto", "http, https"), ("X-Forwarded-Host", "sync.example.org")]))
        #expect(bare == ForwardedOrigin(client: "127.0.0.1", scheme: "https", host: "sync.example.org"))
    }

    @Test func aRequestNamesItsClientAndOrigin() {
        var request = HTTPRequest(head: HTTPRequestHead(method: "GET", target: "/x", version: .http1_1, headers: headers([("Host", "h:81")])))
        request.peer = address("192.0.2.1")
        #expect(request.clientAddress == "192.0.2.1")
        #expect(request.origin == "http://h:81")
        request.forwarded = ForwardedOrigin(client: "198.51.100.9", scheme: "https", host: "sync.example.org")
        #expect(request.clientAddress == "198.51.100.9")
        #expect(request.origin == "https://sync.example.org")
    }
}
