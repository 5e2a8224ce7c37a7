/// Spells the status line and header section of a response (RFC 9112 §4, §5): the one place the
/// server writes a response head, for the answers on a connection and for the 503 at capacity.
///
/// The framing and connection fields are the encoder's: `Content-Length`, `Transfer-Encoding` and
/// `Connection` given by a handler are left out and written from `contentLength` and `keepAlive`.
enum HTTPResponseHeadEncoder {
    /// The interim answer to `Expect: 100-continue` (RFC 9110 §10.1.1).
    static let continueHead: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// Whether a handler's fields ask to close the connection: the last `Connection` field names `close`.
    static func asksToClose(_ headers: HTTPHeaders) -> Bool {
        var close = false
        for field in headers where field.name.equalsIgnoringASCIICase("Connection") {
            close = field.value.lowercased().contains("close")
        }
        return close
    }

    /// Whether a response with this status has content: not 1xx, 204 or 304 (RFC 9110 §6.4.1, §8.6).
    static func hasContent(_ status: HTTPStatus) -> Bool {
        status.code >= 200 && status.code != 204 && status.code != 304
    }

    /// Appends the head to `buffer`. `contentLength` nil: the body is chunked (HTTP/1.1) or ends
    /// when the connection closes (HTTP/1.0).
    static func encode(
        _ status: HTTPStatus,
        _ headers: HTTPHeaders,
        version: HTTPVersion,
        contentLength: Int?,
        keepAlive: Bool,
        date: String,
        into buffer: inout [UInt8]
    ) {
        buffer.append(contentsOf: (version == .http1_0 ? "HTTP/1.0 " : "HTTP/1.1 ").utf8)
        appendDecimal(status.code, to: &buffer)
        buffer.append(UInt8(ascii: " "))
        append(status.reasonPhrase, to: &buffer)
        buffer.append(contentsOf: "\r\n".utf8)
        appendField("Date", date, to: &buffer)
        for field in headers where !isFramingOrConnection(field.name) {
            appendField(field.name, field.value, to: &buffer)
        }
        if let contentLength {
            // RFC 9110 §8.6: no Content-Length on 1xx, 204, or a 304 (which has no body here).
            if hasContent(status) {
                buffer.append(contentsOf: "Content-Length: ".utf8)
                appendDecimal(contentLength, to: &buffer)
                buffer.append(contentsOf: "\r\n".utf8)
            }
        } else if version == .http1_1 {
            buffer.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8)
        }
        if !keepAlive {
            buffer.append(contentsOf: "Connection: close\r\n".utf8)
        } else if version == .http1_0 {
            buffer.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        buffer.append(contentsOf: "\r\n".utf8)
    }

    private static func isFramingOrConnection(_ name: String) -> Bool {
        name.equalsIgnoringASCIICase("Connection")
            || name.equalsIgnoringASCIICase("Content-Length")
            || name.equalsIgnoringASCIICase("Transfer-Encoding")
    }

    /// One field line: `name: value` and its CRLF.
    private static func appendField(_ name: String, _ value: String, to buffer: inout [UInt8]) {
        append(name, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        buffer.append(UInt8(ascii: " "))
        append(value, to: &buffer)
        buffer.append(UInt8(ascii: "\r"))
        buffer.append(UInt8(ascii: "\n"))
    }

    /// The string's bytes, copied at once rather than through its UTF-8 view's iterator.
    private static func append(_ text: String, to buffer: inout [UInt8]) {
        var text = text
        text.withUTF8 { buffer.append(contentsOf: $0) }
    }

    private static func appendDecimal(_ value: Int, to buffer: inout [UInt8]) {
        guard value >= 10 else {
            buffer.append(UInt8(ascii: "0") + UInt8(max(value, 0)))
            return
        }
        appendDecimal(value / 10, to: &buffer)
        buffer.append(UInt8(ascii: "0") + UInt8(value % 10))
    }
}
