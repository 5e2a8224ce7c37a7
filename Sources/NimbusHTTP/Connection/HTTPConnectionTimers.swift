/// What the running deadline of a connection guards: it decides what happens when it passes.
enum HTTPConnectionTimer: Equatable, Sendable {
    /// The request head must arrive: from accept for the first request (an idle connection
    /// closes silently, a started head is answered 408), else from the head's first byte.
    case header
    /// An idle connection between requests: closes silently.
    case keepAlive
    /// A request body that stopped arriving: 408.
    case bodyIdle
    /// A request body slower than the minimum rate: 408.
    case bodyRate
}

/// The connection's time limits, from the server's configuration.
struct HTTPConnectionTimeouts: Equatable, Sendable {
    var headerSeconds: Double
    var bodySeconds: Double
    var keepAliveSeconds: Double
    /// The whole body must arrive within `bodySeconds` plus one second per this many bytes
    /// received; 0: no minimum.
    var minBodyBytesPerSecond: Double

    init(headerSeconds: Double, bodySeconds: Double, keepAliveSeconds: Double, minBodyBytesPerSecond: Double) {
        self.headerSeconds = headerSeconds
        self.bodySeconds = bodySeconds
        self.keepAliveSeconds = keepAliveSeconds
        self.minBodyBytesPerSecond = minBodyBytesPerSecond
    }

    init(_ configuration: HTTPServer.Configuration) {
        self.init(headerSeconds: configuration.headerTimeoutSeconds, bodySeconds: configuration.bodyTimeoutSeconds,
                  keepAliveSeconds: configuration.keepAliveTimeoutSeconds,
                  minBodyBytesPerSecond: configuration.minBodyBytesPerSecond)
    }

    /// A duration in seconds as nanoseconds (negative: none).
    static func nanoseconds(_ seconds: Double) -> UInt64 {
        UInt64(max(seconds, 0) * 1_000_000_000)
    }

    /// What the 408 says when `timer` ran out.
    func reason(_ timer: HTTPConnectionTimer) -> String {
        switch timer {
        case .header, .keepAlive:
            "The request head was not received within \(Self.format(headerSeconds)) seconds."
        case .bodyIdle:
            "The request body stalled for more than \(Self.format(bodySeconds)) seconds."
        case .bodyRate:
            "The request body arrived slower than \(Self.format(minBodyBytesPerSecond)) bytes per second (after the first \(Self.format(bodySeconds)) seconds)."
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
