/// Where a connection is in its cycle of requests.
enum HTTPConnectionPhase: Equatable, Sendable {
    /// Waiting for the first byte of a request (fresh from accept, or keep-alive idle).
    case idle
    case readingHead
    case readingBody
    /// The handler has the request; no timers, unless its body streams in.
    case responding
    case closed
}

/// The socket events a connection waits for.
struct HTTPConnectionInterest: OptionSet, Equatable, Sendable {
    let rawValue: UInt8

    /// Input to read (EPOLLIN).
    static let read = HTTPConnectionInterest(rawValue: 1)
    /// The peer shutting down its sending side (EPOLLRDHUP).
    static let peerClose = HTTPConnectionInterest(rawValue: 2)
    /// Room in the socket for queued output (EPOLLOUT).
    static let write = HTTPConnectionInterest(rawValue: 4)

    /// The epoll events for this interest.
    var epollEvents: UInt32 {
        (contains(.read) ? EventLoop.epollIn : 0)
            | (contains(.peerClose) ? EventLoop.epollRDHUP : 0)
            | (contains(.write) ? EventLoop.epollOut : 0)
    }
}

/// One thing a connection does after an event, as its state decided.
enum HTTPConnectionAction: Equatable, Sendable {
    /// Send `100 Continue`: the client waits for it before sending the body.
    case sendContinue
    /// Hand the request to the handler: with its whole body, or with a body stream when it
    /// streams (then at once, after the head).
    case dispatch
    /// The streamed request body ended: tell its consumer.
    case finishBodyStream
    /// The streamed request body will not end: tell its consumer why.
    case failBodyStream(HTTPStatus, reason: String)
    /// Answer a protocol error (parse error, timeout) and close after it; input saved for later
    /// requests is dropped.
    case respondWithError(HTTPStatus, reason: String)
    /// Send the probe the streamed answer registered (the peer shut down its input).
    case sendProbe
    /// Read what the peer sent before it shut down its input.
    case readInput
    /// Parse the input saved while the previous request was answered, now.
    case resumeInput
    /// The answer is on the wire and the connection waits for the next request: forget the
    /// exchange's handlers, and parse saved input (after the current event batch).
    case awaitNextRequest
    /// Close the socket and fail whatever waits on it.
    case close
    /// Tell the handler its request is abandoned (the connection closed before the answer was complete).
    case cancelHandler
}

/// How a connection closes (the state's `close`, `drain`): the handler is told when its answer
/// was not complete.
struct HTTPConnectionClosing: Equatable, Sendable {
    var cancelsHandler: Bool

    var actions: HTTPConnectionActions {
        var actions = HTTPConnectionActions(.close)
        if cancelsHandler { actions.append(.cancelHandler) }
        return actions
    }
}

/// What follows an answer once it is on the wire (the state's `outputDrained`).
enum HTTPExchangeEnd: Equatable, Sendable {
    /// The connection cannot carry another request (`Connection: close`, draining, a refused body).
    case close
    /// Wait for the next request; parse saved input after the current event batch.
    case awaitNextRequest

    var actions: HTTPConnectionActions {
        HTTPConnectionActions(self == .close ? .close : .awaitNextRequest)
    }
}

/// What the peer shutting down its sending side asks for (the state's `peerClosedInput`).
enum HTTPPeerClosedInput: Equatable, Sendable {
    /// Send the streamed answer's probe: a client really gone answers it with a reset.
    case sendProbe
    /// Read what the peer sent before its FIN.
    case readInput

    var actions: HTTPConnectionActions {
        HTTPConnectionActions(self == .sendProbe ? .sendProbe : .readInput)
    }
}

/// The actions one event asks for, in order: at most three, held inline so that events on the hot
/// path allocate nothing.
struct HTTPConnectionActions: Sequence, Equatable, Sendable, ExpressibleByArrayLiteral {
    private var first: HTTPConnectionAction?
    private var second: HTTPConnectionAction?
    private var third: HTTPConnectionAction?

    init() {}

    init(_ action: HTTPConnectionAction) {
        first = action
    }

    /// For tests; the connection itself never builds an array.
    init(arrayLiteral actions: HTTPConnectionAction...) {
        for action in actions { append(action) }
    }

    var isEmpty: Bool { first == nil }

    mutating func append(_ action: HTTPConnectionAction) {
        if first == nil {
            first = action
        } else if second == nil {
            second = action
        } else {
            precondition(third == nil, "an event asked for more than three actions")
            third = action
        }
    }

    mutating func append(contentsOf actions: HTTPConnectionActions) {
        for action in actions { append(action) }
    }

    func makeIterator() -> Iterator { Iterator(actions: self) }

    struct Iterator: IteratorProtocol {
        let actions: HTTPConnectionActions
        var position = 0

        mutating func next() -> HTTPConnectionAction? {
            defer { position += 1 }
            switch position {
            case 0: return actions.first
            case 1: return actions.second
            case 2: return actions.third
            default: return nil
            }
        }
    }
}
