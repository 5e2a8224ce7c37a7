/// The handle a handler answers through, from any thread. Calls hop to the connection's event
/// loop; once the connection has closed, or the request has been answered, they do nothing.
///
/// Answer with `respond` once, or with `startStreaming`, any number of `writeChunk`, then
/// `finishStreaming` (chunked encoding; long-poll heartbeats and downloads).
package final class HTTPResponseWriter: @unchecked Sendable {
    // @unchecked: `connection` is only dereferenced inside tasks executed on its event loop;
    // `requestID` guards against answering a later request on the same keep-alive connection.
    private let connection: HTTPConnection
    private let loop: EventLoop
    private let requestID: UInt64

    init(connection: HTTPConnection, requestID: UInt64) {
        self.connection = connection
        self.loop = connection.loop
        self.requestID = requestID
    }

    /// Sends a complete response (`Content-Length` is set from the body).
    package func respond(_ response: HTTPResponse) {
        let connection = connection, requestID = requestID
        loop.execute { connection.respond(response, requestID: requestID) }
    }

    /// Sends the head of a streamed response: chunked, or with `Content-Length` when the length
    /// is known (downloads), in which case exactly that many bytes must follow.
    package func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int? = nil) {
        let connection = connection, requestID = requestID
        loop.execute { connection.startStreaming(status: status, headers: headers, contentLength: contentLength, requestID: requestID) }
    }

    /// Sends body bytes of a streamed response and returns once the connection's outbound
    /// buffer has room (backpressure for large bodies); false when the client is gone.
    package func write(_ bytes: [UInt8]) async -> Bool {
        let connection = connection, requestID = requestID
        return await withCheckedContinuation { continuation in
            loop.execute { connection.write(bytes, requestID: requestID, resume: continuation) }
        }
    }

    /// Sends one chunk (empty chunks are skipped: an empty chunk would end the body).
    package func writeChunk(_ bytes: [UInt8]) {
        let connection = connection, requestID = requestID
        loop.execute { connection.writeChunk(bytes, requestID: requestID) }
    }

    /// Ends a chunked response.
    package func finishStreaming() {
        let connection = connection, requestID = requestID
        loop.execute { connection.finishStreaming(requestID: requestID) }
    }

    /// Bytes to send at once if the client shuts down its sending side while this streamed answer
    /// is under way (a long-poll's heartbeat): a client that only half-closed reads them as the
    /// answer's whitespace; one that is gone answers with a reset, which cancels the request.
    package func probeWhenInputCloses(_ bytes: [UInt8]) {
        let connection = connection, requestID = requestID
        loop.execute { connection.setInputClosedProbe(bytes, requestID: requestID) }
    }

    /// Registers what to do if the client goes away before the answer is complete (runs on the
    /// event loop thread; keep it short). A parked long-poll uses it to free its waiter.
    package func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let connection = connection, requestID = requestID
        loop.execute { connection.setCancelHandler(handler, requestID: requestID) }
    }
}
