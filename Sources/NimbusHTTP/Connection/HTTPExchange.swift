/// One request and how far its answer got, with the framing decisions of that answer.
struct HTTPExchange: Equatable, Sendable {
    /// Numbers the requests of a connection: a handler's calls for an earlier one are ignored.
    private(set) var requestID: UInt64 = 0
    /// Whether the connection carries another request after this answer.
    private(set) var keepAlive = true
    private(set) var isHeadRequest = false
    private(set) var version: HTTPVersion = .http1_1
    private(set) var responseStarted = false
    private(set) var responseComplete = false
    /// The answer is streamed (`startStreaming`), not given whole.
    private(set) var streaming = false
    /// Bytes left to send of a fixed-length streamed answer (nil: chunked, or none).
    private(set) var fixedLengthRemaining: Int?

    /// What a request head asks of its exchange.
    struct Request: Equatable, Sendable {
        var keepAlive = true
        var isHeadRequest = false
        var version: HTTPVersion = .http1_1

        init() {}

        init(_ head: HTTPRequestHead) {
            keepAlive = head.keepAlive
            isHeadRequest = head.method == "HEAD"
            version = head.version
        }
    }

    /// What the head of the answer says, besides the handler's status and fields.
    struct ResponseHead: Equatable, Sendable {
        var version: HTTPVersion
        var keepAlive: Bool
        var isHeadRequest: Bool
    }

    /// How body bytes of a streamed answer go on the wire.
    enum BodyFraming: Equatable, Sendable {
        /// This many of them (a fixed-length answer takes no more than it announced).
        case fixedLength(Int)
        /// As one chunk (HTTP/1.1).
        case chunked
        /// As they are; the body ends when the connection closes (HTTP/1.0).
        case untilClose
    }

    /// How a streamed answer ends.
    enum End: Equatable, Sendable {
        /// With the last chunk of the chunked coding.
        case lastChunk
        /// With its last byte: a fixed length, HEAD, or HTTP/1.0.
        case complete
        /// Fewer bytes than announced: the framing is broken, only closing tells the client.
        case tooShort
    }

    /// The exchange after `previous` for a request that asked `request`; `draining`: the server shuts down.
    init(after previous: HTTPExchange, _ request: Request, draining: Bool) {
        requestID = previous.requestID &+ 1
        keepAlive = request.keepAlive && !draining
        isHeadRequest = request.isHeadRequest
        version = request.version
    }

    init() {}

    /// The exchange after `previous` that answers a protocol error (parse error, timeout), in
    /// HTTP/1.1, and closes.
    static func error(after previous: HTTPExchange) -> HTTPExchange {
        var exchange = HTTPExchange()
        exchange.requestID = previous.requestID &+ 1
        exchange.keepAlive = false
        return exchange
    }

    /// The answer starts: whole, or streamed with `contentLength` (nil: chunked, or until close for
    /// HTTP/1.0). `closeRequested`: the handler's fields or the server's shutdown end the connection.
    mutating func startResponse(streamed: Bool, contentLength: Int?, closeRequested: Bool) -> ResponseHead {
        responseStarted = true
        if streamed {
            streaming = true
            fixedLengthRemaining = contentLength
            // HTTP/1.0 has no chunked coding: the body ends when the connection closes.
            if version == .http1_0 && contentLength == nil { keepAlive = false }
            // HEAD: the length is announced, no body follows.
            if isHeadRequest, contentLength != nil { responseComplete = true }
        } else {
            responseComplete = true
        }
        if closeRequested { keepAlive = false }
        return ResponseHead(version: version, keepAlive: keepAlive, isHeadRequest: isHeadRequest)
    }

    /// Whether a streamed answer takes body bytes now.
    var acceptsBody: Bool { streaming && !responseComplete }

    /// How `count` body bytes of the streamed answer are sent; nil when none are (empty, or HEAD).
    mutating func frameBody(_ count: Int) -> BodyFraming? {
        guard acceptsBody, count > 0, !isHeadRequest else { return nil }
        guard let remaining = fixedLengthRemaining else { return version == .http1_1 ? .chunked : .untilClose }
        let taken = min(count, remaining)
        fixedLengthRemaining = remaining - taken
        return .fixedLength(taken)
    }

    /// The handler ends its streamed answer.
    mutating func finishResponse() -> End {
        if let remaining = fixedLengthRemaining, remaining > 0 { return .tooShort }
        responseComplete = true
        return version == .http1_1 && !isHeadRequest && fixedLengthRemaining == nil ? .lastChunk : .complete
    }
}
