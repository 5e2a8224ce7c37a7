/// A writer's sink on a server: every call hops to the connection's event loop, for the request
/// it was made for (a handler's late calls for an earlier request on a keep-alive connection are
/// ignored by the connection).
final class ConnectionResponseSink: HTTPResponseSink, @unchecked Sendable {
    // @unchecked: `connection` is only dereferenced inside tasks executed on its event loop (or on
    // that loop's thread, `isInLoop`); `requestID` guards against answering a later request.
    private let connection: HTTPConnection
    private let loop: EventLoop
    private let requestID: UInt64

    init(connection: HTTPConnection, requestID: UInt64) {
        self.connection = connection
        self.loop = connection.loop
        self.requestID = requestID
    }

    /// Runs `body` with the connection on its event loop.
    private func onLoop(_ body: @escaping @Sendable (HTTPConnection, UInt64) -> Void) {
        let connection = connection, requestID = requestID
        loop.execute { body(connection, requestID) }
    }

    func respond(_ response: HTTPResponse) {
        // Answered on the loop already (immediate routes): no closure to allocate and run.
        if loop.isInLoop { return connection.respond(response, requestID: requestID) }
        onLoop { connection, requestID in connection.respond(response, requestID: requestID) }
    }

    func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int?) {
        onLoop { connection, requestID in
            connection.startStreaming(status: status, headers: headers, contentLength: contentLength, requestID: requestID)
        }
    }

    func write(_ bytes: [UInt8]) async -> Bool {
        let connection = connection, requestID = requestID, loop = loop
        return await withCheckedContinuation { continuation in
            loop.execute { connection.write(bytes, requestID: requestID, resume: continuation) }
        }
    }

    func writeChunk(_ bytes: [UInt8]) {
        onLoop { connection, requestID in connection.writeChunk(bytes, requestID: requestID) }
    }

    func finishStreaming(last: [UInt8]) {
        onLoop { connection, requestID in connection.finishStreaming(requestID: requestID, last: last) }
    }

    func probeWhenInputCloses(_ bytes: [UInt8]) {
        onLoop { connection, requestID in connection.setInputClosedProbe(bytes, requestID: requestID) }
    }

    func onCancel(_ handler: @escaping @Sendable () -> Void) {
        onLoop { connection, requestID in connection.setCancelHandler(handler, requestID: requestID) }
    }
}

extension HTTPResponseWriter {
    /// The writer of the request `requestID` on `connection`.
    init(connection: HTTPConnection, requestID: UInt64) {
        self.init(sink: ConnectionResponseSink(connection: connection, requestID: requestID))
    }
}
