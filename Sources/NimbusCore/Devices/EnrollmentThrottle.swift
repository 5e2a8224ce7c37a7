/// Limits failed `POST /devices/enroll` attempts (wrong, expired or used codes): at most
/// `perAddress` in any minute from one client address and `overall` in any minute for the whole
/// instance. A pure state machine: the caller passes the time.
///
/// The windows slide: a refused attempt learns when the oldest failure that counts leaves its
/// minute (`retryAfter`). Memory is bounded: an address keeps at most `perAddress` times, and
/// addresses with no failure in the last minute are dropped when `pruneInterval` has passed.
package struct EnrollmentThrottle: Sendable {
    package let perAddress: Int
    package let overall: Int
    package static let window: Int64 = 60_000
    private var byAddress: [String: [Int64]] = [:]
    private var all: [Int64] = []
    private var lastPrune: Int64 = 0

    package init(perAddress: Int, overall: Int) {
        self.perAddress = perAddress
        self.overall = overall
    }

    /// Whether an attempt from `address` may be checked now (milliseconds); when not, the
    /// seconds until it may.
    package mutating func admit(_ address: String, now: Int64) -> Decision {
        prune(now)
        let windowStart = now - Self.window
        all.removeAll { $0 <= windowStart }
        if overall > 0, all.count >= overall, let oldest = all.first {
            return .refused(retryAfterSeconds: Self.seconds(until: oldest + Self.window, from: now), scope: .server)
        }
        let times = (byAddress[address] ?? []).filter { $0 > windowStart }
        byAddress[address] = times.isEmpty ? nil : times
        if perAddress > 0, times.count >= perAddress, let oldest = times.first {
            return .refused(retryAfterSeconds: Self.seconds(until: oldest + Self.window, from: now), scope: .address)
        }
        return .admitted
    }

    /// Counts a failed attempt from `address`.
    package mutating func recordFailure(_ address: String, now: Int64) {
        all.append(now)
        if all.count > max(overall, 0) { all.removeFirst(all.count - max(overall, 0)) }
        var times = byAddress[address] ?? []
        times.append(now)
        if times.count > max(perAddress, 0) { times.removeFirst(times.count - max(perAddress, 0)) }
        byAddress[address] = times
    }

    /// Addresses currently remembered (for tests of the bound).
    package var rememberedAddresses: Int { byAddress.count }

    package enum Decision: Sendable, Equatable {
        case admitted
        case refused(retryAfterSeconds: Int, scope: Scope)
    }

    package enum Scope: Sendable, Equatable {
        case address
        case server
    }

    private mutating func prune(_ now: Int64) {
        guard now - lastPrune >= Self.window else { return }
        lastPrune = now
        let windowStart = now - Self.window
        byAddress = byAddress.filter { $0.value.last.map { $0 > windowStart } ?? false }
    }

    private static func seconds(until deadline: Int64, from now: Int64) -> Int {
        max(1, Int((deadline - now + 999) / 1000))
    }
}
