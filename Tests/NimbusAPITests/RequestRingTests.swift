import NimbusAPI
import Testing

/// The console's request log: a fixed number of entries, newest first, and counts per minute.
@Suite struct RequestRingTests {
    private func entry(_ index: Int, at: Int64 = 0, status: Int = 200) -> RequestRing.Entry {
        RequestRing.Entry(at: at, method: "GET", route: "/r\(index)", status: status, milliseconds: 1)
    }

    /// The figure docs/console.md gives: 1,000 entries of at most 128 bytes (the strings are shared
    /// literals and the session's own).
    @Test func anEntryTakesAtMost128Bytes() {
        #expect(MemoryLayout<RequestRing.Entry>.stride <= 128)
    }

    @Test func keepsTheLastCapacityEntriesNewestFirst() {
        var ring = RequestRing(capacity: 3)
        for index in 1...3 { ring.append(entry(index)) }
        #expect(ring.newestFirst.map(\.route) == ["/r3", "/r2", "/r1"], "exactly the capacity: all kept")
        ring.append(entry(4))
        #expect(ring.newestFirst.map(\.route) == ["/r4", "/r3", "/r2"], "one more: the oldest goes")
        for index in 5...10 { ring.append(entry(index)) }
        #expect(ring.newestFirst.map(\.route) == ["/r10", "/r9", "/r8"])
    }

    @Test func aRingOfNoEntriesStillCountsMinutes() {
        var ring = RequestRing(capacity: 0)
        ring.append(entry(1, at: 120_000))
        #expect(ring.newestFirst.isEmpty)
        #expect(ring.perMinute(now: 120_000).last?.countsByStatus == [200: 1])
    }

    @Test func countsPerMinuteByStatusForTheLastHourOnly() {
        var ring = RequestRing(capacity: 10)
        let minute: Int64 = 60_000
        ring.append(entry(1, at: 0, status: 200))
        ring.append(entry(2, at: 59_999, status: 500))
        ring.append(entry(3, at: minute, status: 200))
        ring.append(entry(4, at: 5 * minute, status: 404))
        let now = 5 * minute + 1
        let minutes = ring.perMinute(now: now)
        #expect(minutes.count == RequestRing.minutesKept)
        #expect(minutes.last?.minute == 5 && minutes.last?.countsByStatus == [404: 1])
        #expect(minutes.first { $0.minute == 0 }?.countsByStatus == [200: 1, 500: 1])
        #expect(minutes.first { $0.minute == 3 }?.countsByStatus == [:], "a quiet minute is there, empty")
        // An hour later the first minutes have left the window.
        ring.append(entry(5, at: 61 * minute, status: 200))
        let later = ring.perMinute(now: 61 * minute)
        #expect(later.first?.minute == 2 && later.allSatisfy { $0.minute != 0 && $0.minute != 1 })
        #expect(later.first { $0.minute == 5 }?.countsByStatus == [404: 1])
    }
}
