/// Limits failed `POST /devices/enroll` attempts (wrong, expired or used codes): at most
/// `perAddress` in any minute from one client address and `overall` in any minute for the whole
/// server; 0 turns a limit off. The failures live in the database, shared by every instance
/// (NimbusStore's `DeviceStore+Throttle.swift`); this type only decides over them, so the rule
/// is testable with plain numbers.
///
/// The window slides: a refused attempt learns when the failure that holds the count at its limit
/// leaves its minute (`retryAfterSeconds`).
package struct EnrollmentThrottle: Sendable, Equatable {
    package let perAddress: Int
    package let overall: Int
    package static let window: Int64 = 60_000

    package init(perAddress: Int, overall: Int) {
        self.perAddress = perAddress
        self.overall = overall
    }

    /// False when both limits are off: nothing needs counting.
    package var isOn: Bool { perAddress > 0 || overall > 0 }

    /// A failure counts at `now` when it is later than this (milliseconds).
    package static func windowStart(now: Int64) -> Int64 { now - window }

    /// The failures that count: times (milliseconds) later than `windowStart`, in any order; only
    /// the newest `overall` of all and `perAddress` of the address are needed.
    package struct Recent: Sendable, Equatable {
        package var overall: [Int64]
        package var fromAddress: [Int64]

        package init(overall: [Int64], fromAddress: [Int64]) {
            self.overall = overall
            self.fromAddress = fromAddress
        }
    }

    /// Whether one more attempt may be checked at `now`; the server-wide limit is named first.
    package func decide(_ recent: Recent, now: Int64) -> Decision {
        if let seconds = Self.retryAfter(recent.overall, limit: overall, now: now) {
            return .refused(retryAfterSeconds: seconds, scope: .server)
        }
        if let seconds = Self.retryAfter(recent.fromAddress, limit: perAddress, now: now) {
            return .refused(retryAfterSeconds: seconds, scope: .address)
        }
        return .admitted
    }

    package enum Decision: Sendable, Equatable {
        case admitted
        case refused(retryAfterSeconds: Int, scope: Scope)
    }

    package enum Scope: Sendable, Equatable {
        case address
        case server
    }

    /// nil while fewer than `limit` failures count; else the seconds until the `limit`-th newest
    /// leaves the window (then fewer than `limit` remain), at most the window's 60. A failure
    /// stamped after `now` (another instance's request that began later and committed first)
    /// counts as made at `now`.
    private static func retryAfter(_ times: [Int64], limit: Int, now: Int64) -> Int? {
        guard limit > 0 else { return nil }
        let counting = times.filter { $0 > windowStart(now: now) }.sorted(by: >)
        guard counting.count >= limit else { return nil }
        let leaves = min(counting[limit - 1], now) + window
        return max(1, Int((leaves - now + 999) / 1000))
    }
}
