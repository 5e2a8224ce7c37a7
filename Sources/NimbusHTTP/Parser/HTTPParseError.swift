/// Why a request could not be parsed: the status to answer with and a sentence naming the fault.
///
/// A parse error is terminal for the connection: the server answers with `status`, adds
/// `Connection: close` and stops reading, because the framing of anything after the fault is unknown.
package struct HTTPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    package var status: HTTPStatus
    /// A human sentence naming what was wrong, e.g. "The request line is longer than 8192 bytes."
    package var reason: String

    package init(status: HTTPStatus, reason: String) {
        self.status = status
        self.reason = reason
    }

    package var description: String { "\(status): \(reason)" }
}

extension HTTPParseError {
    static func badRequest(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: .badRequest, reason: reason)
    }

    static func requestLineTooLong(limit: Int) -> HTTPParseError {
        HTTPParseError(status: .uriTooLong, reason: "The request line is longer than \(limit) bytes.")
    }

    static func fieldLineTooLong(limit: Int, trailer: Bool) -> HTTPParseError {
        let what = trailer ? "A trailer field line" : "A header field line"
        return HTTPParseError(status: .requestHeaderFieldsTooLarge, reason: "\(what) is longer than \(limit) bytes.")
    }

    static func fieldSectionTooLarge(limit: Int) -> HTTPParseError {
        HTTPParseError(
            status: .requestHeaderFieldsTooLarge,
            reason: "The header and trailer fields together are larger than \(limit) bytes."
        )
    }

    static func tooManyFields(limit: Int) -> HTTPParseError {
        HTTPParseError(
            status: .requestHeaderFieldsTooLarge,
            reason: "The request has more than \(limit) header and trailer fields."
        )
    }

    static func chunkSizeLineTooLong(limit: Int) -> HTTPParseError {
        .badRequest("A chunk-size line is longer than \(limit) bytes.")
    }

    static func bodyTooLarge(length: Int, limit: Int) -> HTTPParseError {
        HTTPParseError(
            status: .contentTooLarge,
            reason: "The request body of \(length) bytes is larger than the limit of \(limit) bytes; split it into smaller requests."
        )
    }

    static func chunkedBodyTooLarge(limit: Int) -> HTTPParseError {
        HTTPParseError(status: .contentTooLarge, reason: "The chunked request body is larger than \(limit) bytes; split it into smaller requests.")
    }

    /// The error for a byte that is not allowed where it stands; a CR gets its own sentence because a
    /// CR that does not end a line is the usual smuggling probe (RFC 9112 §2.2).
    static func invalidByte(_ byte: UInt8, in place: String) -> HTTPParseError {
        if byte == .cr { return .badRequest("The \(place) contains a CR that is not followed by LF.") }
        let hex = String(byte, radix: 16, uppercase: true)
        return .badRequest("The \(place) contains the byte 0x\(byte < 0x10 ? "0" : "")\(hex), which is not allowed there.")
    }
}
