extension HTTPParser {
    /// Handles a chunk-size line: starts the chunk's data, or the trailer section after the last chunk.
    mutating func handleChunkSizeLine(_ line: UnsafeRawBufferPointer) throws(HTTPParseError) -> Event? {
        let size = try Self.parseChunkSizeLine(line)
        if size == 0 {
            state = .trailerLine
            return nil
        }
        // RFC 9110 §15.5.14: 413 as soon as the decoded total would pass the limit, before its bytes.
        let (total, overflow) = chunkedBodyBytes.addingReportingOverflow(size)
        guard !overflow, total <= maxBodyBytes else { throw .chunkedBodyTooLarge(limit: maxBodyBytes) }
        chunkedBodyBytes = total
        state = .chunkData(remaining: size)
        return nil
    }

    /// The size of a chunk-size line (`1*HEXDIG *chunk-ext`, without CRLF); extensions are checked
    /// and ignored.
    static func parseChunkSizeLine(_ line: UnsafeRawBufferPointer) throws(HTTPParseError) -> Int {
        var index = 0, size = 0
        // RFC 9112 §7.1: chunk-size = 1*HEXDIG.
        while index < line.count, let digit = line[index].hexDigitValue {
            // RFC 9112 §7.1: a recipient must anticipate and reject sizes that overflow.
            // `size * 16` is a multiple of 16 at most Int.max - 15, so adding a digit cannot overflow.
            let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
            guard !overflow else { throw .badRequest("The chunk size does not fit in \(Int.bitWidth - 1) bits.") }
            size = shifted + digit
            index += 1
        }
        // RFC 9112 §7.1: at least one hex digit.
        guard index > 0 else { throw .badRequest("The chunk-size line does not start with a hexadecimal size.") }
        try validateChunkExtensions(line, from: index)
        return size
    }

    /// Checks `*( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )` (RFC 9112 §7.1.1).
    /// Whitespace is accepted only where BWS stands, so `1 ` (a trailing space) is rejected.
    private static func validateChunkExtensions(_ line: UnsafeRawBufferPointer, from start: Int) throws(HTTPParseError) {
        var index = start
        while index < line.count {
            index = line.skippingWhitespace(from: index)
            // RFC 9112 §7.1.1: anything after the size is a chunk extension, introduced by ";".
            guard index < line.count, line[index] == .semicolon else {
                throw .badRequest("The chunk size is followed by something other than a chunk extension.")
            }
            index = line.skippingWhitespace(from: index + 1)
            let nameStart = index
            while index < line.count, line[index].isTokenCharacter { index += 1 }
            // RFC 9112 §7.1.1: chunk-ext-name = token.
            guard index > nameStart else { throw .badRequest("A chunk extension has no name.") }
            let afterName = index
            index = line.skippingWhitespace(from: index)
            if index < line.count, line[index] == .equals {
                index = try endOfExtensionValue(line, from: line.skippingWhitespace(from: index + 1))
            } else {
                index = afterName
            }
        }
    }

    /// The index after a chunk-ext-val starting at `start`: a token or a quoted-string.
    private static func endOfExtensionValue(_ line: UnsafeRawBufferPointer, from start: Int) throws(HTTPParseError) -> Int {
        var index = start
        guard index < line.count, line[index] == .quote else {
            while index < line.count, line[index].isTokenCharacter { index += 1 }
            // RFC 9112 §7.1.1: chunk-ext-val = token / quoted-string.
            guard index > start else { throw .badRequest("A chunk extension has \"=\" but no value.") }
            return index
        }
        index += 1
        while index < line.count {
            let byte = line[index]
            if byte == .quote { return index + 1 }
            if byte == .backslash {
                // RFC 9110 §5.6.4: quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text ).
                index += 1
                guard index < line.count, line[index].isFieldValueCharacter else {
                    throw .badRequest("A chunk extension has a backslash not followed by a visible character.")
                }
            } else if !byte.isQuotedTextCharacter {
                // RFC 9110 §5.6.4: qdtext excludes control characters.
                throw .invalidByte(byte, in: "chunk extension")
            }
            index += 1
        }
        // RFC 9110 §5.6.4: a quoted-string ends with DQUOTE.
        throw .badRequest("A chunk extension has an unterminated quoted string.")
    }
}

extension UnsafeRawBufferPointer {
    /// The first index at or after `index` that is not SP or HTAB.
    fileprivate func skippingWhitespace(from index: Int) -> Int {
        var index = index
        while index < count, self[index].isWhitespace { index += 1 }
        return index
    }
}
