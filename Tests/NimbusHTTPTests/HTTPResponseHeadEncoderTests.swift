import Testing
@testable import NimbusHTTP

/// The one response head encoder: the fields it owns (framing, connection) and the ones it copies.
@Suite struct HTTPResponseHeadEncoderTests {
    static let date = "Sun, 06 Nov 1994 08:49:37 GMT"

    func encode(_ status: HTTPStatus, _ headers: HTTPHeaders = [:], version: HTTPVersion = .http1_1,
                contentLength: Int?, keepAlive: Bool = true) -> String {
        var bytes: [UInt8] = []
        HTTPResponseHeadEncoder.encode(status, headers, version: version, contentLength: contentLength,
                                       keepAlive: keepAlive, date: Self.date, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let status: HTTPStatus
        let headers: HTTPHeaders
        let version: HTTPVersion
        let contentLength: Int?
        let keepAlive: Bool
        let expected: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a complete HTTP/1.1 answer kept alive", status: .ok, headers: ["Content-Type": "text/plain"],
             version: .http1_1, contentLength: 5, keepAlive: true,
             expected: "HTTP/1.1 200 OK\r\nDate: \(date)\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n"),
        Case(name: "a streamed HTTP/1.1 answer is chunked", status: .ok, headers: [:],
             version: .http1_1, contentLength: nil, keepAlive: true,
             expected: "HTTP/1.1 200 OK\r\nDate: \(date)\r\nTransfer-Encoding: chunked\r\n\r\n"),
        Case(name: "a streamed HTTP/1.0 answer ends with the connection", status: .ok, headers: [:],
             version: .http1_0, contentLength: nil, keepAlive: false,
             expected: "HTTP/1.0 200 OK\r\nDate: \(date)\r\nConnection: close\r\n\r\n"),
        Case(name: "HTTP/1.0 kept alive says so", status: .ok, headers: [:],
             version: .http1_0, contentLength: 0, keepAlive: true,
             expected: "HTTP/1.0 200 OK\r\nDate: \(date)\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"),
        Case(name: "204 and 304 carry no Content-Length", status: .noContent, headers: [:],
             version: .http1_1, contentLength: 0, keepAlive: true,
             expected: "HTTP/1.1 204 No Content\r\nDate: \(date)\r\n\r\n"),
        Case(name: "the handler's framing and connection fields are the encoder's", status: .notModified,
             headers: ["ETag": "\"1\"", "Content-Length": "99", "transfer-encoding": "chunked", "Connection": "close"],
             version: .http1_1, contentLength: 0, keepAlive: false,
             expected: "HTTP/1.1 304 Not Modified\r\nDate: \(date)\r\nETag: \"1\"\r\nConnection: close\r\n\r\n"),
    ]

    @Test(arguments: cases) func encodesTheHead(_ row: Case) {
        #expect(encode(row.status, row.headers, version: row.version, contentLength: row.contentLength, keepAlive: row.keepAlive) == row.expected)
    }

    @Test func aConnectionFieldNamingCloseAsksToClose() {
        #expect(HTTPResponseHeadEncoder.asksToClose(["Connection": "Close"]))
        #expect(HTTPResponseHeadEncoder.asksToClose(["connection": "keep-alive, close"]))
        #expect(!HTTPResponseHeadEncoder.asksToClose(["Connection": "keep-alive"]))
        #expect(!HTTPResponseHeadEncoder.asksToClose(["Content-Type": "close"]))
    }

    @Test func statusesWithoutContent() {
        #expect(!HTTPResponseHeadEncoder.hasContent(.continue))
        #expect(!HTTPResponseHeadEncoder.hasContent(.noContent))
        #expect(!HTTPResponseHeadEncoder.hasContent(.notModified))
        #expect(HTTPResponseHeadEncoder.hasContent(.ok))
        #expect(HTTPResponseHeadEncoder.hasContent(.serviceUnavailable))
    }
}
