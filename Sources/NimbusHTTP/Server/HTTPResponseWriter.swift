/// The handle a handler answers through, from any thread. It hands every call to its sink: on a
/// server, the connection's (`ConnectionResponseSink`: calls hop to the connection's event loop
/// and, once the connection has closed or the request has been answered, do nothing); in tests,
/// one that records the answer and plays the client (going away, half-closing).
///
/// Answer with `respond` once, or with `startStreaming`, any number of `writeChunk`, then
/// `finishStreaming` (chunked encoding; long-poll heartbeats and downloads).
package struct HTTPResponseWriter: Sendable {
    private let sink: any HTTPResponseSink

    /// A writer that answers into `sink`.
    package init(sink: any HTTPResponseSink) {
        self.sink = sink
    }

    /// Sends a complete response (`Content-Length` is set from the body).
    package func respond(_ response: HTTPResponse) {
        sink.respond(response)
    }

    /// Sends the head of a streamed response: chunked, or with `Content-Length` when the length
    /// is known (downloads), in which case exactly that many bytes must follow.
    package func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int? = nil) {
        sink.startStreaming(status: status, headers: headers, contentLength: contentLength)
    }

    /// Sends body bytes of a streamed response and returns once the connection's outbound
    /// buffer has room (backpressure for large bodies); false when the client is gone.
    package func write(_ bytes: [UInt8]) async -> Bool {
        await sink.write(bytes)
    }

    /// Sends one chunk (empty chunks are skipped: an empty chunk would end the body).
    package func writeChunk(_ bytes: [UInt8]) {
        sink.writeChunk(bytes)
    }

    /// Ends a streamed response, after `last` body bytes if any: one job on the loop and one
    /// send for both (a write waking a thousand waiters sends a thousand answers).
    package func finishStreaming(last: [UInt8] = []) {
        sink.finishStreaming(last: last)
    }

    /// Bytes to send at once if the client shuts down its sending side while this streamed answer
    /// is under way (a long-poll's heartbeat): a client that only half-closed reads them as the
    /// answer's whitespace; one that is gone answers with a reset, which cancels the request.
    package func probeWhenInputCloses(_ bytes: [UInt8]) {
        sink.probeWhenInputCloses(bytes)
    }

    /// Registers what to do if the client goes away before the answer is complete (runs on the
    /// event loop thread; keep it short). A parked long-poll uses it to free its waiter.
    package func onCancel(_ handler: @escaping @Sendable () -> Void) {
        sink.onCancel(handler)
    }
}

/// Where a writer's calls go: the seam between a handler and its client. `HTTPResponseWriter`
/// documents each call; a sink follows the same rules (one answer, chunks only inside a streamed
/// one, nothing after the end or after the client went away).
package protocol HTTPResponseSink: Sendable {
    func respond(_ response: HTTPResponse)
    func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int?)
    /// Body bytes of a streamed answer, returning once there is room; false when nobody reads any more.
    func write(_ bytes: [UInt8]) async -> Bool
    func writeChunk(_ bytes: [UInt8])
    func finishStreaming(last: [UInt8])
    func probeWhenInputCloses(_ bytes: [UInt8])
    func onCancel(_ handler: @escaping @Sendable () -> Void)
}
