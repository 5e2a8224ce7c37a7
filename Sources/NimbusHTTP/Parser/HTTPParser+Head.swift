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
        head.method = method.decodedString()
        head.target = target.decodedString()
        state = .headerLine
        return nil
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
            framing: framing
        )
        self.framing = framing
        head = HeadAccumulator()
        state = .bodyStart
        return .head(result)
    }
}
