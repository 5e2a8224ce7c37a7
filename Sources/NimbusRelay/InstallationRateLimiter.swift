/// Each installation's pushes per minute, as a token bucket (pure; the relay holds one behind a
/// lock): up to `perMinute` at once, refilled at `perMinute` a minute. In memory, per relay process.
package struct InstallationRateLimiter: Sendable {
    package enum Decision: Sendable, Equatable {
        case allowed
        /// Whole seconds until one push is allowed again (at least 1).
        case refused(retryAfterSeconds: Int)
    }

    package let perMinute: Int
    private var buckets: [String: (tokens: Double, atMilliseconds: Int64)] = [:]

    package init(perMinute: Int) {
        self.perMinute = max(perMinute, 1)
    }

    package mutating func take(installationID: String, nowMilliseconds: Int64) -> Decision {
        let capacity = Double(perMinute)
        let perMillisecond = capacity / 60_000
        var bucket = buckets[installationID] ?? (capacity, nowMilliseconds)
        let elapsed = Double(max(0, nowMilliseconds - bucket.atMilliseconds))
        bucket.tokens = min(capacity, bucket.tokens + elapsed * perMillisecond)
        bucket.atMilliseconds = nowMilliseconds
        defer { buckets[installationID] = bucket }
        guard bucket.tokens >= 1 else {
            let wait = (1 - bucket.tokens) / perMillisecond / 1000
            return .refused(retryAfterSeconds: max(1, Int(wait.rounded(.up))))
        }
        bucket.tokens -= 1
        return .allowed
    }

    /// Forgets an installation (revoked).
    package mutating func forget(_ installationID: String) {
        buckets[installationID] = nil
    }
}
