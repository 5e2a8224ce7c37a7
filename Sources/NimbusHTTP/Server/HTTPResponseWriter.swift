/// The handle a handler answers through, from any thread. Calls hop to the connection's event
/// loop; once the connection has closed, or the request has been answered, they do nothing.
///
/// Answer with `respond` once, or with `startStreaming`, any number of `writeChunk`, then
/// `finishStreaming` (chunked encoding; long-poll heartbeats and downloads).
///
/// A writer made with `init(sink:)` hands everything to that sink instead of a connection: tests
/// drive the API in-process with it.
package final class HTTPResponseWriter: @unchecked Sendable {
    // @unchecked: `connection` is only dereferenced inside tasks executed on its event loop;
    // `requestID` guards against answering a later request on the same keep-alive connection.
    private let connection: HTTPConnection?
    private let loop: EventLoop?
    private let requestID: UInt64
    private let sink: (any HTTPResponseSink)?

    init(connection: HTTPConnection, requestID: UInt64) {
        self.connection = connection
        self.loop = connection.loop
        self.requestID = requestID
        self.sink = nil
    }

    /// A writer that answers into `sink` (no connection, no event loop).
    package init(sink: any HTTPResponseSink) {
        self.connection = nil
        self.loop = nil
        self.requestID = 0
        self.sink = sink
    }

    /// Runs `body` with the connection on its event loop.
    private func onLoop(_ body: @escaping @Sendable (HTTPConnection, UInt64) -> Void) {
        guard let connection, let loop else { return }
        let requestID = requestID
        loop.execute { body(connection, requestID) }
    }

    /// Sends a complete response (`Content-Length` is set from the body).
    package func respond(_ response: HTTPResponse) {
        if let sink { return sink.respond(response) }
        // Answered on the loop already (immediate routes): no closure to allocate and run.
        if let connection, let loop, loop.isInLoop { return connection.respond(response, requestID: requestID) }
        onLoop { connection, requestID in connection.respond(response, requestID: requestID) }
    }

    /// Sends the head of a streamed response: chunked, or with `Content-Length` when the length
    /// is known (downloads), in which case exactly that many bytes must follow.
    package func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int? = nil) {
        if let sink { return sink.startStreaming(status: status, headers: headers, contentLength: contentLength) }
        onLoop { connection, requestID in
            connection.startStreaming(status: status, headers: headers, contentLength: contentLength, requestID: requestID)
        }
    }

    /// Sends body bytes of a streamed response and returns once the connection's outbound
    /// buffer has room (backpressure for large bodies); false when the client is gone.
    package func write(_ bytes: [UInt8]) async -> Bool {
        if let sink { return sink.write(bytes) }
        guard let connection, let loop else { return false }
        let requestID = requestID
        return await withCheckedContinuation { continuation in
            loop.execute { connection.write(bytes, requestID: requestID, resume: continuation) }
        }
    }

    /// Sends one chunk (empty chunks are skipped: an empty chunk would end the body).
    package func writeChunk(_ bytes: [UInt8]) {
        if let sink { _ = sink.write(bytes); return }
        onLoop { connection, requestID in connection.writeChunk(bytes, requestID: requestID) }
    }

    /// Ends a chunked response, after `last` body bytes if any: one job on the loop and one
    /// send for both (a write waking a thousand waiters sends a thousand answers).
    package func finishStreaming(last: [UInt8] = []) {
        if let sink {
            if !last.isEmpty { _ = sink.write(last) }
            return sink.finishStreaming()
        }
        onLoop { connection, requestID in connection.finishStreaming(requestID: requestID, last: last) }
    }

    /// Bytes to send at once if the client shuts down its sending side while this streamed answer
    /// is under way (a long-poll's heartbeat): a client that only half-closed reads them as the
    /// answer's whitespace; one that is gone answers with a reset, which cancels the request.
    package func probeWhenInputCloses(_ bytes: [UInt8]) {
        onLoop { connection, requestID in connection.setInputClosedProbe(bytes, requestID: requestID) }
    }

    /// Registers what to do if the client goes away before the answer is complete (runs on the
    /// event loop thread; keep it short). A parked long-poll uses it to free its waiter.
    package func onCancel(_ handler: @escaping @Sendable () -> Void) {
        onLoop { connection, requestID in connection.setCancelHandler(handler, requestID: requestID) }
    }
}

/// Where a writer without a connection puts its answer (in-process tests).
package protocol HTTPResponseSink: Sendable {
    func respond(_ response: HTTPResponse)
    func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int?)
    /// Body bytes of a streamed answer; false when nobody reads any more.
    func write(_ bytes: [UInt8]) -> Bool
    func finishStreaming()
}
