extension HTTPParser {
    /// What the parser learns while reading a head, before it becomes an `HTTPRequestHead`. The
    /// fields that decide framing and connection handling are noted as their lines go by, so the
    /// common request never searches its headers again.
    struct HeadAccumulator {
        var method = ""
        var target = ""
        var version = HTTPVersion.http1_1
        var headers = HTTPHeaders()
        var hostCount = 0
        /// The first Host field's value, and whether it is a valid one.
        var host: String?
        var hostIsValid = false
        var authorizationCount = 0
        var contentLength = ContentLength.absent
        var hasTransferEncoding = false
        var hasConnection = false
        var hasExpect = false
    }

    /// Handles a line in the request-line state: leading empty lines, then the request line.
    mutating func handleRequestLine(_ line: UnsafeRawBufferPointer) throws(HTTPParseError) -> Event? {
        if line.isEmpty {
            leadingEmptyLines += 1
            // RFC 9112 §2.2: empty lines before the request line are ignored, but only a few.
            if leadingEmptyLines > Self.maxLeadingEmptyLines {
                throw .badRequest("More than \(Self.maxLeadingEmptyLines) empty lines precede the request line.")
            }
            return nil
        }
        // RFC 9112 §3: request-line = method SP request-target SP HTTP-version, single spaces.
        guard let firstSpace = line.firstIndex(of: .space, from: 0),
              let secondSpace = line.firstIndex(of: .space, from: firstSpace + 1)
        else { throw .badRequest("The request line is not of the form \"METHOD target HTTP/1.1\".") }
        let method = line.slice(0..<firstSpace)
        let target = line.slice(firstSpace + 1..<secondSpace)
        // RFC 9112 §3: no whitespace other than the two single spaces.
        guard !method.isEmpty, !target.isEmpty else {
            throw .badRequest("The request line has an empty method or target, or more than one space in a row.")
        }
        // RFC 9110 §9.1: method = token.
        for byte in method where !byte.isTokenCharacter { throw .invalidByte(byte, in: "method") }
        // RFC 9112 §3.2: a request-target is a URI reference, visible ASCII only.
        for byte in target where !byte.isTargetCharacter { throw .invalidByte(byte, in: "request-target") }
        head.version = try Self.parseVersion(line.slice(secondSpace + 1..<line.count))
        try Self.checkTargetForm(method: method, target: target)
        head.method = method.decodedString()
        head.target = target.decodedString()
        state = .headerLine
        return nil
    }

    /// Checks that the target has a form the method may use (RFC 9112 §3.2): origin-form
    /// (`/path?query`) or absolute-form (`scheme://authority/path`) for any method, asterisk-form
    /// (`*`) for OPTIONS only. CONNECT (authority-form, a tunnel) is not implemented: 501.
    static func checkTargetForm(method: UnsafeRawBufferPointer, target: UnsafeRawBufferPointer) throws(HTTPParseError) {
        // RFC 9110 §9.3.6 and §15.6.2: a tunnel we do not offer; 501 for a method not implemented.
        if method.equalsCaseSensitive("CONNECT") {
            throw HTTPParseError(status: .notImplemented, reason: "The CONNECT method is not supported.")
        }
        // RFC 9112 §3.2: request-target = origin-form / absolute-form / authority-form / asterisk-form;
        // none of them has a fragment (RFC 3986 §3.5), which a client keeps to itself.
        if target.firstIndex(of: .hash, from: 0) != nil {
            throw .badRequest("The request-target contains a fragment (#), which a request never carries.")
        }
        if target[0] == .slash { return }
        if target.count == 1, target[0] == .asterisk {
            // RFC 9112 §3.2.4: asterisk-form is only used for a server-wide OPTIONS request.
            if method.equalsCaseSensitive("OPTIONS") { return }
            throw .badRequest("The request-target * is only allowed with OPTIONS.")
        }
        // RFC 9112 §3.2.2: absolute-form; RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
        var index = 0
        while index < target.count, target[index].isASCIILetter
            || (index > 0 && (target[index].isASCIIDigit || target[index] == UInt8(ascii: "+")
                || target[index] == UInt8(ascii: "-") || target[index] == UInt8(ascii: ".")))
        {
            index += 1
        }
        if index > 0, target.count >= index + 3, target[index] == .colon,
           target[index + 1] == .slash, target[index + 2] == .slash
        {
            return
        }
        // RFC 9112 §3.2.3: authority-form is only for CONNECT; anything else is no request-target.
        throw .badRequest("The request-target is neither a path starting with / nor an absolute URI (nor * for OPTIONS).")
    }

    /// Whether a Host field value is `uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2–§3.2.3):
    /// an IP-literal in brackets or a reg-name (unreserved, pct-encoded and sub-delims, which covers
    /// IPv4 addresses), then an optional port of digits. An empty value is valid (RFC 9112 §3.2).
    static func isValidHost(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { isValidHost(UnsafeRawBufferPointer($0)) }
    }

    /// `isValidHost` on the bytes of the value.
    static func isValidHost(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]"), from: 1) else { return false }
            // IPv6address and IPvFuture use hex digits, ":", "." and (IPvFuture) unreserved / sub-delims.
            guard close > 1 else { return false }
            for byte in bytes[1..<close] where !(byte == .colon || byte.isHostCharacter) { return false }
            index = close + 1
        } else {
            while index < bytes.count, bytes[index] != .colon {
                let byte = bytes[index]
                if byte == UInt8(ascii: "%") {
                    // RFC 3986 §2.1: pct-encoded = "%" HEXDIG HEXDIG.
                    guard index + 2 < bytes.count, bytes[index + 1].hexDigitValue != nil, bytes[index + 2].hexDigitValue != nil
                    else { return false }
                    index += 3
                    continue
                }
                guard byte.isHostCharacter else { return false }
                index += 1
            }
        }
        guard index < bytes.count else { return true }
        // RFC 3986 §3.2.3: port = *DIGIT.
        guard bytes[index] == .colon else { return false }
        for byte in bytes[(index + 1)...] where !byte.isASCIIDigit { return false }
        return true
    }

    /// Parses `HTTP/1.1` or `HTTP/1.0`.
    static func parseVersion(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> HTTPVersion {
        // RFC 9112 §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive.
        guard bytes.count == 8,
              bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"), bytes[2] == UInt8(ascii: "T"),
              bytes[3] == UInt8(ascii: "P"), bytes[4] == UInt8(ascii: "/"), bytes[5].isASCIIDigit,
              bytes[6] == UInt8(ascii: "."), bytes[7].isASCIIDigit
        else { throw .badRequest("The request line does not end with an HTTP version such as HTTP/1.1.") }
        switch (bytes[5], bytes[7]) {
        case (UInt8(ascii: "1"), UInt8(ascii: "1")): return .http1_1
        case (UInt8(ascii: "1"), UInt8(ascii: "0")): return .http1_0
        default:
            // RFC 9110 §15.6.6: a well-formed version we do not serve.
            throw HTTPParseError(
                status: .httpVersionNotSupported,
                reason: "HTTP/\(Character(Unicode.Scalar(bytes[5]))).\(Character(Unicode.Scalar(bytes[7]))) is not supported; use HTTP/1.1."
            )
        }
    }

    /// Completes the head at the empty line ending the header section: checks Host, framing and
    /// Expect, and derives keep-alive.
    mutating func completeHead() throws(HTTPParseError) -> Event {
        let version = head.version
        // RFC 9112 §3.2: 400 for more than one Host field line.
        if head.hostCount > 1 { throw .badRequest("The request has more than one Host header field.") }
        // RFC 9112 §3.2: 400 for an HTTP/1.1 request without Host.
        if head.hostCount == 0, version == .http1_1 {
            throw .badRequest("The HTTP/1.1 request has no Host header field.")
        }
        // RFC 9112 §3.2: 400 for a Host field with an invalid value.
        if head.hostCount == 1, !head.hostIsValid {
            throw .badRequest("The Host header field is not a host name or address with an optional port.")
        }
        // RFC 9112 §3.2.2: an absolute-form target's authority replaces Host, so it obeys Host's
        // rules; RFC 9110 §4.2.1 and §4.2.4: an empty host or a userinfo part is invalid.
        var authority = head.host
        if let targetAuthority = HTTPRequestHead.absoluteFormAuthority(head.target) {
            guard !targetAuthority.isEmpty, !targetAuthority.utf8.contains(UInt8(ascii: "@")),
                  Self.isValidHost(targetAuthority) else {
                throw .badRequest("The absolute-form target's authority is not a host name or address with an optional port "
                    + "(no user information, not empty).")
            }
            authority = targetAuthority
        }
        // Two credentials leave it open which one the request means (docs/api.md: ambiguous input is refused).
        if head.authorizationCount > 1 { throw .badRequest("The request has more than one Authorization header field.") }
        let framing = try bodyFraming()
        var expectsContinue = false
        if head.hasExpect {
            let expectations = head.headers.tokens(for: "Expect")
            // RFC 9110 §10.1.1: 417 for an expectation we cannot meet; 100-continue is the only one defined.
            if let other = expectations.first(where: { $0 != "100-continue" }) {
                throw HTTPParseError(
                    status: .expectationFailed,
                    reason: "The expectation \"\(other)\" cannot be met; only 100-continue is supported."
                )
            }
            // RFC 9110 §10.1.1: a 100-continue expectation in an HTTP/1.0 request is ignored.
            expectsContinue = !expectations.isEmpty && version == .http1_1
        }
        var keepAlive = version == .http1_1
        if head.hasConnection {
            // RFC 9112 §9.3: "close" ends the connection; an HTTP/1.0 one persists only on "keep-alive".
            let options = head.headers.tokens(for: "Connection")
            keepAlive = options.contains("close") ? false : (keepAlive || options.contains("keep-alive"))
        }
        let result = HTTPRequestHead(
            method: head.method,
            target: head.target,
            version: version,
            headers: head.headers,
            keepAlive: keepAlive,
            expectsContinue: expectsContinue,
            framing: framing,
            authority: authority
        )
        self.framing = framing
        head = HeadAccumulator()
        state = .bodyStart
        return .head(result)
    }
}
