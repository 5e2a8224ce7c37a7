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

    /// Sends the head of a chunked response.
    package func startStreaming(status: HTTPStatus, headers: HTTPHeaders) {
        let connection = connection, requestID = requestID
        loop.execute { connection.startStreaming(status: status, headers: headers, requestID: requestID) }
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

    /// Registers what to do if the client goes away before the answer is complete (runs on the
    /// event loop thread; keep it short). A parked long-poll uses it to free its waiter.
    package func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let connection = connection, requestID = requestID
        loop.execute { connection.setCancelHandler(handler, requestID: requestID) }
    }
}
