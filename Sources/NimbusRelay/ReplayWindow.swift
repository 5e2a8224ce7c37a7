/// Which signed requests are fresh (pure; the relay holds one behind a lock). A request's timestamp
/// must be within `windowSeconds` of the relay's clock either way, and its (installation, nonce) must
/// not have been seen while it could still be fresh; so a captured request cannot be sent again.
/// A nonce is remembered until its request's timestamp is out of the window, no longer.
///
/// Kept in memory: a relay restarted within the window could accept one replay of a request signed
/// before the restart (a duplicate push, nothing more; docs/push.md "The relay").
package struct ReplayWindow: Sendable {
    package enum Verdict: Sendable, Equatable {
        case fresh
        /// The timestamp is further than the window from the relay's clock (a wrong clock, or an old capture).
        case stale(skewSeconds: Int64)
        case replayed
    }

    package let windowSeconds: Int64
    /// (installation id, nonce) → the second after which it can no longer be fresh.
    private var seen: [String: Int64] = [:]
    private var sweepAt = 1024

    package init(windowSeconds: Int64 = 300) {
        self.windowSeconds = windowSeconds
    }

    package var count: Int { seen.count }

    /// Admits a request signed at `timestamp` with `nonce` at `nowSeconds`, remembering its nonce.
    package mutating func admit(installationID: String, nonce: String, timestamp: Int64, nowSeconds: Int64) -> Verdict {
        let skew = timestamp - nowSeconds
        guard abs(skew) <= windowSeconds else { return .stale(skewSeconds: skew) }
        if seen.count >= sweepAt {
            seen = seen.filter { $0.value >= nowSeconds }
            sweepAt = max(1024, seen.count * 2)
        }
        let key = installationID + " " + nonce
        if let until = seen[key], until >= nowSeconds { return .replayed }
        seen[key] = timestamp + windowSeconds
        return .fresh
    }
}
