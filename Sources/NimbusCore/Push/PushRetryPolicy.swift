/// What APNs (or the way to it) answered one attempt of a push.
package struct PushAnswer: Sendable, Hashable {
    /// The HTTP status; nil when no answer came (connection refused or lost, timeout).
    package var status: Int?
    /// APNs' `reason` (`BadDeviceToken`, `Unregistered`, …), when the answer had one.
    package var reason: String?
    /// `Retry-After` in seconds, when the answer had one.
    package var retryAfterSeconds: Int?

    package init(status: Int?, reason: String? = nil, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
    }
}

/// What becomes of a push after an attempt.
package enum PushDecision: Sendable, Hashable {
    /// 200: done.
    case delivered
    /// 410 `Unregistered`, 400 `BadDeviceToken` / `DeviceTokenNotForTopic`: the APNs token is dead
    /// for this app; its registration (and every push queued for it) is removed.
    case removeRegistration
    /// 429, 5xx, 403 `ExpiredProviderToken` (the sender makes a new provider token first) and no
    /// answer: try again at this time (milliseconds since 1970).
    case retry(at: Int64)
    /// Any other 4xx: sending again would not help.
    case giveUp
    /// The next attempt would be at or after the push's `apns-expiration`: it is dropped.
    case expired
}

/// The retry rule of docs/api.md "At least once, nothing lost": exponential backoff from 1 s,
/// doubling to at most 10 min, never sooner than `Retry-After`, until the push expires.
package enum PushRetryPolicy {
    package static let firstDelayMillis: Int64 = 1_000
    package static let maxDelayMillis: Int64 = 600_000

    /// Reasons of a 400 that mean the token will never work for this topic.
    static let deadTokenReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic"]

    /// The wait before the next attempt after `attempts` attempts (1 → 1 s, 2 → 2 s, … capped at 10 min).
    package static func delayMillis(afterAttempts attempts: Int) -> Int64 {
        let doublings = max(attempts, 1) - 1
        // 2^10 s already exceeds the cap: no overflow for any attempt count.
        guard doublings < 10 else { return maxDelayMillis }
        return min(firstDelayMillis << Int64(doublings), maxDelayMillis)
    }

    /// The decision for `answer` to attempt number `attempts` (counting this one) made at `now`,
    /// for a push that expires at `expiresAt` (both milliseconds since 1970).
    package static func decide(_ answer: PushAnswer, attempts: Int, now: Int64, expiresAt: Int64) -> PushDecision {
        switch answer.status {
        case 200?:
            return .delivered
        case 410?:
            return .removeRegistration
        case 400? where answer.reason.map(deadTokenReasons.contains) == true:
            return .removeRegistration
        case 403? where answer.reason == "ExpiredProviderToken":
            break
        case 429?, nil:
            break
        case let status? where (500...599).contains(status):
            break
        default:
            return .giveUp
        }
        var delay = delayMillis(afterAttempts: attempts)
        if let seconds = answer.retryAfterSeconds, seconds > 0 {
            delay = max(delay, Int64(seconds) * 1_000)
        }
        let next = now + delay
        return next >= expiresAt ? .expired : .retry(at: next)
    }
}
