extension HTTPParser {
    /// What the Content-Length field lines of a head amount to.
    enum ContentLength: Equatable {
        case absent
        case value(Int)
        /// An element is not 1*DIGIT or overflows `Int`.
        case invalid
        /// Valid values that differ.
        case conflicting

        /// Adds one field value: a comma-separated list whose elements must all be the same number
        /// (RFC 9110 §8.6 lets a recipient accept `5, 5` or repeated fields as one `5`).
        func adding(_ value: UnsafeRawBufferPointer) -> ContentLength {
            if self == .invalid { return self }
            var result = self
            var elementStart = 0
            while true {
                let end = value.firstIndex(of: .comma, from: elementStart) ?? value.count
                guard let length = Self.parseDecimal(value.slice(elementStart..<end)) else { return .invalid }
                switch result {
                case .absent: result = .value(length)
                case .value(let previous) where previous != length: result = .conflicting
                default: break
                }
                if end == value.count { return result }
                elementStart = end + 1
            }
        }

        /// 1*DIGIT surrounded by optional whitespace, or nil: no sign, no inner spaces, no overflow.
        private static func parseDecimal(_ element: UnsafeRawBufferPointer) -> Int? {
            var start = 0, end = element.count
            while start < end, element[start].isWhitespace { start += 1 }
            while end > start, element[end - 1].isWhitespace { end -= 1 }
            guard start < end else { return nil }
            var result = 0
            for index in start..<end {
                let byte = element[index]
                guard byte.isASCIIDigit else { return nil }
                let (shifted, overflowA) = result.multipliedReportingOverflow(by: 10)
                let (sum, overflowB) = shifted.addingReportingOverflow(Int(byte &- UInt8(ascii: "0")))
                guard !overflowA, !overflowB else { return nil }
                result = sum
            }
            return result
        }
    }

    /// Handles a header line, or with `trailer` a trailer line (validated and counted alike, then
    /// discarded). The empty line ends the head, or the message.
    mutating func handleFieldLine(_ line: UnsafeRawBufferPointer, trailer: Bool) throws(HTTPParseError) -> Event? {
        if line.isEmpty {
            if trailer {
                endMessage()
                return .messageEnd
            }
            return try completeHead()
        }
        fieldCount += 1
        // RFC 9112 §5: a 4xx for more fields than we process; RFC 6585 §5 names it 431.
        if fieldCount > limits.maxHeaderCount { throw .tooManyFields(limit: limits.maxHeaderCount) }
        fieldBytes += line.count + 2
        let section = trailer ? "trailer" : "header"
        // RFC 9112 §5.2: obs-fold (a line starting with whitespace) is rejected with 400.
        if line[0].isWhitespace {
            throw .badRequest("A \(section) line starts with whitespace (obsolete line folding is not accepted).")
        }
        var nameEnd = 0
        while nameEnd < line.count, line[nameEnd].isTokenCharacter { nameEnd += 1 }
        guard nameEnd < line.count, line[nameEnd] == .colon else {
            // RFC 9112 §5: field-line = field-name ":" OWS field-value OWS.
            guard nameEnd < line.count, line.firstIndex(of: .colon, from: nameEnd) != nil else {
                throw .badRequest("A \(section) line has no colon.")
            }
            // RFC 9112 §5.1: no whitespace between the field name and the colon.
            if line[nameEnd].isWhitespace {
                throw .badRequest("A \(section) line has whitespace between the field name and the colon.")
            }
            // RFC 9110 §5.1: field-name = token.
            throw .invalidByte(line[nameEnd], in: "\(section) field name")
        }
        // RFC 9110 §5.1: a field name is a token, so it is not empty.
        guard nameEnd > 0 else { throw .badRequest("A \(section) line has an empty field name.") }
        var valueStart = nameEnd + 1, valueEnd = line.count
        // RFC 9110 §5.5: no control characters in a field value (HTAB and obs-text are allowed).
        for index in valueStart..<valueEnd where !line[index].isFieldValueCharacter {
            throw .invalidByte(line[index], in: "value of a \(section) field")
        }
        while valueStart < valueEnd, line[valueStart].isWhitespace { valueStart += 1 }
        while valueEnd > valueStart, line[valueEnd - 1].isWhitespace { valueEnd -= 1 }
        if trailer { return nil }
        let name = line.slice(0..<nameEnd), value = line.slice(valueStart..<valueEnd)
        let isHost = noteWellKnownField(name: name, value: value)
        // One allocation per array for a typical head instead of regrowing at 1, 2, 4 and 8 fields.
        if head.headers.isEmpty { head.headers.reserveCapacity(16) }
        let valueText = value.decodedString()
        if isHost, head.host == nil { head.host = valueText }
        head.headers.add(name: name.decodedString(), value: valueText)
        return nil
    }

    /// Notes the fields that decide framing and connection handling, compared on their bytes;
    /// true for a Host field.
    private mutating func noteWellKnownField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 4 where name.equalsCaseInsensitive("host"):
            head.hostCount += 1
            head.hostIsValid = Self.isValidHost(value)
            return true
        case 6 where name.equalsCaseInsensitive("expect"): head.hasExpect = true
        case 10 where name.equalsCaseInsensitive("connection"): head.hasConnection = true
        case 13 where name.equalsCaseInsensitive("authorization"): head.authorizationCount += 1
        case 14 where name.equalsCaseInsensitive("content-length"): head.contentLength = head.contentLength.adding(value)
        case 17 where name.equalsCaseInsensitive("transfer-encoding"): head.hasTransferEncoding = true
        default: break
        }
        return false
    }

    /// The body framing the head asks for (RFC 9112 §6.3).
    func bodyFraming() throws(HTTPParseError) -> BodyFraming {
        if head.hasTransferEncoding {
            // RFC 9112 §6.3: Transfer-Encoding with Content-Length is a smuggling attempt; reject.
            if head.contentLength != .absent {
                throw .badRequest("The request has both Transfer-Encoding and Content-Length.")
            }
            // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 means faulty framing; we reject it.
            if head.version == .http1_0 {
                throw .badRequest("An HTTP/1.0 request cannot use Transfer-Encoding.")
            }
            return try Self.framing(transferCodings: head.headers.tokens(for: "Transfer-Encoding"))
        }
        switch head.contentLength {
        case .absent: return .none
        case .value(let length): return .length(length)
        // RFC 9112 §6.3: an invalid Content-Length is unrecoverable; 400.
        case .invalid: throw .badRequest("The Content-Length header field is not a decimal number of bytes.")
        // RFC 9112 §6.3 and RFC 9110 §8.6: differing Content-Length values; 400.
        case .conflicting: throw .badRequest("The request has Content-Length values that differ.")
        }
    }

    /// Codings registered with IANA that we recognise but do not decode.
    private static let knownTransferCodings: Set<String> = ["compress", "deflate", "gzip", "x-compress", "x-gzip"]

    /// The framing for the lower-cased codings of every Transfer-Encoding line, in order.
    ///
    /// Only `chunked`, once and alone, is decoded. Where RFC 9112 leaves us a choice: a coding we
    /// do not recognise, or a list without chunked, is 501 (§6.1: "SHOULD respond with 501"), and so
    /// is a recognised coding before a final chunked (we decode no other coding). A list whose
    /// codings are all recognised but put chunked elsewhere than last is 400 (§6.3), as are an
    /// empty list and a repeated chunked (§6.1). Parameters are not parsed: `chunked;x=1` is a
    /// coding we do not recognise.
    static func framing(transferCodings codings: [String]) throws(HTTPParseError) -> BodyFraming {
        // RFC 9112 §6.1: Transfer-Encoding = #transfer-coding; an empty list frames nothing.
        if codings.isEmpty { throw .badRequest("The Transfer-Encoding header field lists no coding.") }
        // RFC 9112 §6.1: chunked is applied at most once.
        if codings.count(where: { $0 == "chunked" }) > 1 {
            throw .badRequest("The Transfer-Encoding header field lists chunked more than once.")
        }
        // RFC 9112 §6.1: 501 for a transfer coding the server does not understand.
        if let unknown = codings.first(where: { $0 != "chunked" && !knownTransferCodings.contains($0) }) {
            throw HTTPParseError(status: .notImplemented, reason: "The transfer coding \"\(unknown)\" is not supported.")
        }
        // RFC 9112 §6.1 and §6.3: without chunked the body cannot be framed; 501, as documented above.
        guard let last = codings.last, codings.contains("chunked") else {
            throw HTTPParseError(
                status: .notImplemented,
                reason: "The Transfer-Encoding header field lacks chunked; only chunked bodies are supported."
            )
        }
        // RFC 9112 §6.3: a request whose final coding is not chunked gets 400.
        if last != "chunked" {
            throw .badRequest("The Transfer-Encoding header field does not end with chunked.")
        }
        // RFC 9112 §6.1: 501 for a coding before chunked that we do not decode.
        if codings.count > 1 {
            throw HTTPParseError(
                status: .notImplemented,
                reason: "The transfer coding \"\(codings[0])\" is not supported; only chunked is."
            )
        }
        return .chunked
    }
}
