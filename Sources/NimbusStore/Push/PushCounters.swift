import NimbusSupport

/// What became of pushes since this process started, for `/metrics` (docs/push.md "For
/// operators"). One per `Database` (`Store.pushCounters`), shared by every store and the sender.
///
/// Who counts what: the store counts `queued` (after the write that queued the pushes commits)
/// and `skippedByLongPoll` (when a poll past a notification drops its pushes); the sender counts
/// one `sent()` per 200 and one `failed(reason:)` per attempt that got anything else or no answer.
package final class PushCounters: Sendable {
    /// APNs' documented `reason` values (Apple: "Handling notification responses from APNs",
    /// "Values for the APNs JSON reason key"), the only label values besides `noAnswer` and
    /// `other`: the series cannot grow with whatever a server or a gateway sends.
    package static let documentedReasons: Set<String> = [
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
        "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
        "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
        "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken",
        "BadEnvironmentKeyInToken", "BadPath", "MethodNotAllowed", "ExpiredToken", "Unregistered", "PayloadTooLarge",
        "TooManyProviderTokenUpdates", "TooManyRequests", "InternalServerError", "ServiceUnavailable", "Shutdown",
    ]
    /// The label of an attempt that got no answer (connection refused or lost, timeout).
    package static let noAnswer = "no-answer"
    /// The label of a reason outside `documentedReasons` (or an error answer without one).
    package static let other = "other"

    /// The counts at one moment.
    package struct Snapshot: Sendable, Equatable {
        package var queued = 0
        package var sent = 0
        /// By label: a documented reason, `noAnswer` or `other`.
        package var failedByReason: [String: Int] = [:]
        package var skippedByLongPoll = 0

        package var failed: Int { failedByReason.values.reduce(0, +) }
    }

    private let counts = Lock(Snapshot())

    package init() {}

    /// `count` pushes were queued by a committed write.
    package func queued(_ count: Int) {
        guard count > 0 else { return }
        counts.withLock { $0.queued += count }
    }

    /// APNs answered 200 to one attempt.
    package func sent() {
        counts.withLock { $0.sent += 1 }
    }

    /// One attempt was not delivered: `reason` is APNs' `reason` of the answer, or nil when no
    /// answer came (an answer without a reason: pass ""). Counted under `label(reason:)`.
    package func failed(reason: String?) {
        let label = Self.label(reason: reason)
        counts.withLock { $0.failedByReason[label, default: 0] += 1 }
    }

    /// `count` pushes (one by default) were dropped because the device's long-poll delivered
    /// their notifications first.
    package func skippedByLongPoll(_ count: Int = 1) {
        guard count > 0 else { return }
        counts.withLock { $0.skippedByLongPoll += count }
    }

    package var snapshot: Snapshot { counts.withLock { $0 } }

    /// The bounded label for a failure's reason.
    package static func label(reason: String?) -> String {
        guard let reason else { return noAnswer }
        return documentedReasons.contains(reason) ? reason : other
    }
}
