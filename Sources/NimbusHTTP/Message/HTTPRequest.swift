import NimbusSupport

/// A complete request as handlers see it: the parsed head and the whole body.
package struct HTTPRequest: Sendable {
    package var head: HTTPRequestHead
    package var body: [UInt8]
    /// Values of `:name` segments of the matched route pattern.
    package var pathParameters: [String: String] = [:]
    /// For routes whose bodies stream (see `HTTPServer.Configuration.bodyStreamLimit`): the body
    /// as it arrives; `body` is then empty.
    package var bodyStream: HTTPBodyStream?
    /// The address of the connection's peer (a proxy's, behind one).
    package var peer: PeerAddress = .unknown
    /// What a trusted proxy said of the client (`HTTPServer.Configuration.trustedProxies`).
    package var forwarded: ForwardedOrigin?
    /// When the request was complete (`monotonicNanoseconds`, as of its event loop's wake-up);
    /// 0 for a request that came through no connection.
    package var receivedAt: UInt64 = 0
    /// The event loop the request came in on: a handler's task may run there and wait for its
    /// database statements through it (`Execution.onLoop`); nil for a request made in process.
    package var loop: (any LoopContext)?

    /// Where the request's latency is counted from: `receivedAt`, or now without one.
    package var latencyStart: UInt64 { receivedAt != 0 ? receivedAt : monotonicNanoseconds() }

    package init(head: HTTPRequestHead, body: [UInt8] = []) {
        self.head = head
        self.body = body
    }

    package var method: String { head.method }
    package var path: String { head.path }
    package var headers: HTTPHeaders { head.headers }
    /// The authority the request is for (absolute-form target, else Host).
    package var authority: String? { head.authority }
    /// The client's address: as a trusted proxy forwarded it, else the connection's peer.
    package var clientAddress: String { forwarded?.client ?? peer.description }
    /// The base of absolute URLs for this request (`https://sync.example.org`): scheme and host as
    /// a trusted proxy forwarded them, else `http` and the request's authority.
    package var origin: String {
        "\(forwarded?.scheme ?? "http")://\(forwarded?.host ?? authority ?? "127.0.0.1")"
    }

    /// The decoded value of a query parameter (`?since=...&wait=5`); nil when absent.
    package func queryParameter(_ name: String) -> String? {
        guard let query = head.query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts[0] == name {
                return parts.count > 1 ? String(parts[1]).removingPercentEncodingForQuery() : ""
            }
        }
        return nil
    }
}

extension String {
    /// Percent-decoding for query values (`+` is a space); invalid escapes are kept as written.
    func removingPercentEncodingForQuery() -> String {
        let bytes = PercentDecoding.decode(Substring(self).utf8, plusIsSpace: true, strict: false) ?? Array(utf8)
        return String(decoding: bytes, as: UTF8.self)
    }
}
