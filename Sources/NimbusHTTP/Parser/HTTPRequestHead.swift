/// How the body of a request is delimited (RFC 9112 §6.3).
package enum BodyFraming: Sendable, Hashable {
    /// No body: neither Content-Length nor Transfer-Encoding was sent.
    case none
    /// Exactly this many bytes follow the head.
    case length(Int)
    /// The body is a sequence of chunks ending with a last-chunk and trailers (RFC 9112 §7.1).
    case chunked
}

/// The request line and header section of one request, with the framing and connection facts the
/// server needs derived once by the parser.
package struct HTTPRequestHead: Sendable, Hashable {
    package typealias BodyFraming = NimbusHTTP.BodyFraming

    /// The method as sent; methods are case-sensitive tokens (RFC 9110 §9.1).
    package var method: String
    /// The request-target as sent.
    package var target: String
    /// The target up to `?` for origin-form; the path of an absolute-form target ("/" when it has
    /// none); `*` for asterisk-form; the whole target for authority-form.
    package var path: String
    /// The part after the first `?`, or nil when there is no `?`.
    package var query: String?
    package var version: HTTPVersion
    /// The fields as sent: names in their original case, values trimmed of surrounding whitespace.
    package var headers: HTTPHeaders
    /// Whether the connection stays open after this exchange (RFC 9112 §9.3): for HTTP/1.1 unless
    /// `Connection` lists `close`, for HTTP/1.0 only when it lists `keep-alive`.
    package var keepAlive: Bool
    /// `Expect: 100-continue` on an HTTP/1.1 request: the client waits for `100 Continue` before the body.
    package var expectsContinue: Bool
    package var framing: BodyFraming
    /// The authority the request is for: an absolute-form target's (RFC 9112 §3.2.2), else the
    /// Host field's. What absolute URLs in answers are built from.
    package var authority: String?

    /// A head for `target`, with `path` and `query` derived from it.
    package init(
        method: String,
        target: String,
        version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = [:],
        keepAlive: Bool = true,
        expectsContinue: Bool = false,
        framing: BodyFraming = .none,
        authority: String? = nil
    ) {
        let (path, query) = Self.split(target: target)
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
        self.framing = framing
        self.authority = authority ?? headers["Host"]
    }

    /// The authority of an absolute-form target (`scheme://authority/...`), or nil for other forms.
    package static func absoluteFormAuthority(_ target: String) -> String? {
        let bytes = target.utf8
        guard bytes.first != UInt8(ascii: "/"), let start = absoluteFormAuthorityStart(bytes) else { return nil }
        let end = bytes[start...].firstIndex {
            $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
        } ?? bytes.endIndex
        return String(target[start..<end])
    }

    /// Splits a request-target into path and query (RFC 9112 §3.2.1–§3.2.4).
    package static func split(target: String) -> (path: String, query: String?) {
        let bytes = target.utf8
        if target == "*" { return ("*", nil) }
        var pathStart = bytes.startIndex
        if bytes.first != UInt8(ascii: "/") {
            guard let authorityStart = absoluteFormAuthorityStart(bytes) else {
                // authority-form (CONNECT) or a target the router will not know: kept whole.
                return (target, nil)
            }
            let afterAuthority = bytes[authorityStart...].firstIndex {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
            }
            pathStart = afterAuthority ?? bytes.endIndex
        }
        let rest = target[pathStart...]
        guard let mark = rest.utf8.firstIndex(of: UInt8(ascii: "?")) else {
            return (rest.isEmpty ? "/" : String(rest), nil)
        }
        let path = target[pathStart..<mark]
        return (path.isEmpty ? "/" : String(path), String(target[target.utf8.index(after: mark)...]))
    }

    /// Where the authority starts when `bytes` begins with `scheme "://"` (RFC 3986 §3.1), else nil.
    private static func absoluteFormAuthorityStart(_ bytes: String.UTF8View) -> String.Index? {
        var index = bytes.startIndex
        guard index < bytes.endIndex, bytes[index].isASCIILetter else { return nil }
        index = bytes.index(after: index)
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: ":") { break }
            guard byte.isASCIILetter || byte.isASCIIDigit
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            else { return nil }
            index = bytes.index(after: index)
        }
        guard bytes[index...].starts(with: "://".utf8) else { return nil }
        return bytes.index(index, offsetBy: 3)
    }
}
