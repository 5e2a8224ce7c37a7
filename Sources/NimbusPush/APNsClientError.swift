/// Why `APNsClient.send` got no HTTP answer. Any answer APNs gives, error statuses included, is an
/// `APNsResponse`; these are the cases where there is none.
package enum APNsClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connection failed or broke before an answer: retry with backoff (docs/api.md § Push to sleeping devices).
    case connection(APNsConnectionFailure)
    /// The request cannot be sent as it is (a device token that is not hex, say); retrying won't help.
    case invalidRequest(String)
    /// The provider token could not be signed.
    case signing(String)
    /// The client was shut down before the request finished.
    case shutDown

    package var description: String {
        switch self {
        case .connection(let failure): "APNs connection failed: \(failure)"
        case .invalidRequest(let reason): "invalid APNs request: \(reason)"
        case .signing(let reason): "cannot sign the APNs provider token: \(reason)"
        case .shutDown: "the APNs client was shut down"
        }
    }
}

/// A connection-level failure, classified, with libcurl's own words.
package struct APNsConnectionFailure: Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable {
        /// No connection: refused, unreachable, name not resolved.
        case couldNotConnect
        /// The TLS handshake failed: untrusted certificate, wrong host name, no ALPN agreement.
        case tls
        /// The connection broke mid-request: reset, closed, HTTP/2 GOAWAY or stream reset.
        case connectionLost
        /// The connect or request timeout passed.
        case timedOut
        /// Anything else libcurl reports.
        case other
    }

    package var kind: Kind
    /// libcurl's `CURLcode`.
    package var code: Int
    package var detail: String

    package init(kind: Kind, code: Int, detail: String) {
        self.kind = kind
        self.code = code
        self.detail = detail
    }

    package var description: String { "\(kind.rawValue) (curl \(code)): \(detail)" }
}
