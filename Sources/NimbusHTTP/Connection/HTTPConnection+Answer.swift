/// The handler's side of a connection (through `HTTPResponseWriter`, on the loop thread): each
/// call is a step of the connection's drive loop, or part of the step under way when the handler
/// answers inside `dispatch` (immediate routes).
extension HTTPConnection {
    func setCancelHandler(_ handler: @escaping @Sendable () -> Void, requestID: UInt64) {
        guard state.isAnswering(requestID) else { return }
        cancelHandler = handler
    }

    /// Registers the bytes sent if the peer shuts down its input during this streamed answer.
    func setInputClosedProbe(_ bytes: [UInt8], requestID: UInt64) {
        guard state.isAnswering(requestID) else { return }
        inputClosedProbe = bytes
        if state.inputClosed, state.exchange.streaming { writeChunk(bytes, requestID: requestID) }
    }

    func respond(_ response: HTTPResponse, requestID: UInt64) {
        drive {
            let closeRequested = HTTPResponseHeadEncoder.asksToClose(response.headers)
            let contentLength = response.body.count
            guard let head = state.startResponse(requestID: requestID, streamed: false, contentLength: contentLength,
                                                 closeRequested: closeRequested) else { return }
            cancelHandler = nil
            let bodyAllowed = !head.isHeadRequest && HTTPResponseHeadEncoder.hasContent(response.status)
            // A large body with nothing queued goes to the socket from where it lies (zero-copy).
            let sendsBodyInPlace = bodyAllowed && contentLength > Self.copiedBodyBytes && outbound.isEmpty
            encode(head, response.status, response.headers, contentLength: contentLength)
            if sendsBodyInPlace {
                finishFlush(outbound.flush(thenBody: response.body, to: descriptor))
                return
            }
            if bodyAllowed { outbound.append(contentsOf: response.body) }
            flush()
        }
    }

    func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int?, requestID: UInt64) {
        drive {
            let closeRequested = HTTPResponseHeadEncoder.asksToClose(headers)
            guard let head = state.startResponse(requestID: requestID, streamed: true, contentLength: contentLength,
                                                 closeRequested: closeRequested) else { return }
            encode(head, status, headers, contentLength: contentLength)
            if state.exchange.responseComplete { cancelHandler = nil }  // HEAD: no body follows
            flush()
        }
    }

    /// Queues body bytes and calls back (on the loop) when the outbound buffer has room again;
    /// false when the connection is gone.
    func write(_ bytes: [UInt8], requestID: UInt64, resume: CheckedContinuation<Bool, Never>) {
        guard state.acceptsBody(requestID) else {
            resume.resume(returning: false)
            return
        }
        drive {
            writeChunk(bytes, requestID: requestID)
            if outbound.unsentCount > Self.outboundHighWatermark {
                drainWaiter = resume  // resumed with false if the connection closes
            } else {
                resume.resume(returning: true)
            }
        }
    }

    func writeChunk(_ bytes: [UInt8], requestID: UInt64) {
        drive {
            if appendBody(bytes, requestID: requestID) { flush() }
        }
    }

    /// Frames body bytes into the outbound buffer, not sent yet; false when they do not belong.
    private func appendBody(_ bytes: [UInt8], requestID: UInt64) -> Bool {
        guard let framing = state.frameBody(bytes.count, requestID: requestID) else { return false }
        switch framing {
        case .fixedLength(let count): outbound.append(contentsOf: bytes[0..<count])
        case .chunked: outbound.appendChunk(bytes)
        case .untilClose: outbound.append(contentsOf: bytes)
        }
        return true
    }

    /// Ends a streamed response, its `last` body bytes and the end going out in one send.
    func finishStreaming(requestID: UInt64, last: [UInt8] = []) {
        drive {
            let appended = !last.isEmpty && appendBody(last, requestID: requestID)
            guard let end = state.finishResponse(requestID: requestID) else { return appended ? flush() : () }
            switch end {
            case .tooShort:
                return close()
            case .lastChunk:
                outbound.appendLastChunk()
            case .complete:
                break
            }
            cancelHandler = nil
            flush()
        }
    }

    private func encode(_ head: HTTPExchange.ResponseHead, _ status: HTTPStatus, _ headers: HTTPHeaders, contentLength: Int?) {
        let date = loop.cachedDateHeader
        outbound.append { bytes in
            HTTPResponseHeadEncoder.encode(status, headers, version: head.version, contentLength: contentLength,
                                           keepAlive: head.keepAlive, date: date, into: &bytes)
        }
    }
}

extension HTTPConnection {
    /// Bytes reserved up front for a body of known length (at most this many: a client that
    /// announces a large body and sends nothing holds no more).
    static let reservedBodyBytes = 256 * 1024

    /// An empty buffer for the body `framing` announces, with room for all of it when its length is
    /// known, within `limit` and `reservedBodyBytes`: a body read in several pieces (the loop reads
    /// 64 KiB at a time) is then never copied to a larger buffer on the way.
    static func bodyBuffer(for framing: BodyFraming, limit: Int) -> [UInt8] {
        var body: [UInt8] = []
        if case .length(let length) = framing, length > 0, length <= limit { body.reserveCapacity(min(length, reservedBodyBytes)) }
        return body
    }
}
