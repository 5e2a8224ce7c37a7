/// The per-device background push window (docs/api.md "What is pushed"): at most
/// `maxBackgroundPushesPerHour` background pushes to one device in any hour. Of the background pushes
/// due together for a device, one per zone goes on, carrying the zone's latest notification (the
/// others are merged into it: the app fetches from the newer cursor); of those, as many as the
/// window has room for go out now, and the rest are held until it opens.
package enum BackgroundPushWindow {
    package static let lengthMillis: Int64 = 3_600_000

    /// A background push due now.
    package struct Candidate: Sendable, Hashable {
        package var id: Int64
        /// The collapse key (the zone).
        package var zone: String
        /// The notification's position: later is newer.
        package var sequence: Int64

        package init(id: Int64, zone: String, sequence: Int64) {
            self.id = id
            self.zone = zone
            self.sequence = sequence
        }
    }

    package struct Plan: Sendable, Hashable {
        /// To send now, oldest notification first.
        package var send: [Int64] = []
        /// Held until `opensAt`.
        package var hold: [Int64] = []
        /// Merged into a newer push of their zone: not sent.
        package var merged: [Int64] = []
        /// When the window next has room (set when something is held).
        package var opensAt: Int64?
        /// The device's send times inside the window after this plan (what to store).
        package var sentAt: [Int64] = []
    }

    /// The plan for `candidates` of one device at `now`, given the times background pushes went
    /// to it (`sentAt`, any order, old ones ignored). `maxPerHour` ≤ 0: no window.
    package static func plan(sentAt: [Int64], candidates: [Candidate], maxPerHour: Int, now: Int64) -> Plan {
        var plan = Plan()
        var latest: [String: Candidate] = [:]
        for candidate in candidates {
            if let kept = latest[candidate.zone] {
                let (newer, older) = candidate.sequence > kept.sequence ? (candidate, kept) : (kept, candidate)
                latest[candidate.zone] = newer
                plan.merged.append(older.id)
            } else {
                latest[candidate.zone] = candidate
            }
        }
        let survivors = latest.values.sorted { ($0.sequence, $0.id) < ($1.sequence, $1.id) }
        var recent = sentAt.filter { $0 > now - lengthMillis && $0 <= now }.sorted()
        guard maxPerHour > 0 else {
            plan.send = survivors.map(\.id)
            plan.sentAt = recent
            return plan
        }
        for survivor in survivors {
            if recent.count < maxPerHour {
                plan.send.append(survivor.id)
                recent.append(now)
            } else {
                plan.hold.append(survivor.id)
            }
        }
        plan.sentAt = recent
        if !plan.hold.isEmpty, let oldest = recent.first {
            // The oldest send leaves the window then, making room for one.
            plan.opensAt = oldest + lengthMillis
        }
        plan.merged.sort()
        return plan
    }
}
