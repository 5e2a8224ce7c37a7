import Foundation
import Glibc
import NimbusAPI
import NimbusCore
import NimbusPostgres
import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

@Suite struct MetricsTests {
    @Test func countsRequestsByRouteMethodAndStatus() {
        let metrics = Metrics()
        let start = monotonicNanoseconds()
        metrics.record(route: "/limits", method: "GET", status: 200, start: start)
        metrics.record(route: "/limits", method: "GET", status: 200, start: start)
        metrics.record(route: "/healthz", method: "GET", status: 503, start: start)
        let text = metrics.render()
        #expect(text.contains("nimbus_http_requests_total{route=\"/limits\",method=\"GET\",status=\"200\"} 2"))
        #expect(text.contains("nimbus_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"503\"} 1"))
        #expect(text.contains("nimbus_http_request_duration_seconds_count{route=\"/limits\"} 2"))
        #expect(text.contains("nimbus_http_request_duration_seconds_bucket{route=\"/limits\",le=\"+Inf\"} 2"))
    }

    @Test func madeUpMethodsShareOneSeries() {
        let metrics = Metrics()
        let start = monotonicNanoseconds()
        let before = metrics.render().utf8.count
        for index in 0..<5_000 {
            metrics.record(route: "(unrouted)", method: "BREW\(index)", status: 404, start: start)
        }
        metrics.record(route: "(unrouted)", method: "PATCH", status: 404, start: start)
        let text = metrics.render()
        #expect(text.contains("nimbus_http_requests_total{route=\"(unrouted)\",method=\"other\",status=\"404\"} 5000"))
        #expect(text.contains("nimbus_http_requests_total{route=\"(unrouted)\",method=\"PATCH\",status=\"404\"} 1"))
        #expect(!text.contains("BREW"))
        // Two series and one histogram more than an empty scrape, whatever the number of methods.
        #expect(text.utf8.count - before < 3_000)
        // The request log (a fixed-size ring) keeps the method as sent.
        #expect(metrics.recentRequests.newestFirst.first?.method == "PATCH")
        #expect(metrics.recentRequests.newestFirst.dropFirst().first?.method == "BREW4999")
    }

    @Test func histogramBucketsAreCumulative() {
        let metrics = Metrics()
        // A request that started 2 s ago lands above the 1 s bucket.
        metrics.record(route: "/slow", method: "GET", status: 200, start: monotonicNanoseconds() - 2_000_000_000)
        let text = metrics.render()
        #expect(text.contains("nimbus_http_request_duration_seconds_bucket{route=\"/slow\",le=\"1.0\"} 0"))
        #expect(text.contains("nimbus_http_request_duration_seconds_bucket{route=\"/slow\",le=\"2.5\"} 1"))
        #expect(text.contains("nimbus_http_request_duration_seconds_bucket{route=\"/slow\",le=\"60.0\"} 1"))
    }

    @Test func gaugesAreReadAtScrapeTime() {
        let metrics = Metrics()
        let value = Counter()
        metrics.addGauge("nimbus_test_gauge", help: "A test gauge.") { Double(value.next()) }
        #expect(metrics.render().contains("nimbus_test_gauge 1\n"))
        #expect(metrics.render().contains("nimbus_test_gauge 2\n"))
        #expect(metrics.render().contains("# TYPE nimbus_test_gauge gauge\n"))
    }

    @Test func countersKeptElsewhereAreTypedAsCounters() {
        let metrics = Metrics()
        metrics.addCounter("nimbus_test_things_total", help: "Things done.") { 41.5 }
        let text = metrics.render()
        #expect(text.contains("# HELP nimbus_test_things_total Things done.\n# TYPE nimbus_test_things_total counter\nnimbus_test_things_total 41.5\n"))
    }
}

import Synchronization

final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func next() -> Int { value.add(1, ordering: .relaxed).newValue }
}

/// Push's series (docs/push.md "For operators"): counters with a bounded reason label, and the
/// queue's gauges read at scrape time or left out when the database cannot answer.
@Suite struct PushMetricsTests {
    @Test func aLabeledCounterRendersOneSeriesPerValueSortedAndEscaped() {
        let metrics = Metrics()
        metrics.addLabeledCounter("nimbus_test_total", help: "Test.", label: "reason") { ["b": 2, "a\"\\": 1] }
        let text = metrics.render()
        #expect(text.contains("# TYPE nimbus_test_total counter\nnimbus_test_total{reason=\"a\\\"\\\\\"} 1\nnimbus_test_total{reason=\"b\"} 2\n"), "\(text)")
    }

    @Test func countersAreScrapedWithTheirReasonsBounded() async {
        let store = Self.unreachableStore()
        let metrics = Metrics()
        PushMetrics.register(in: metrics, store: store, timeout: .milliseconds(200))
        store.pushCounters.queued(4)
        store.pushCounters.sent()
        store.pushCounters.failed(reason: "Unregistered")
        store.pushCounters.failed(reason: "a reason made up by a gateway")
        store.pushCounters.failed(reason: nil)
        store.pushCounters.skippedByLongPoll()
        let text = await metrics.scrape()
        #expect(text.contains("nimbus_push_queued_total 4\n"), "\(text)")
        #expect(text.contains("nimbus_push_sent_total 1\n"))
        #expect(text.contains("nimbus_push_failed_total{reason=\"Unregistered\"} 1\n"))
        #expect(text.contains("nimbus_push_failed_total{reason=\"other\"} 1\n"))
        #expect(text.contains("nimbus_push_failed_total{reason=\"no-answer\"} 1\n"))
        #expect(!text.contains("gateway"))
        #expect(text.contains("nimbus_push_skipped_long_poll_total 1\n"))
    }

    @Test func aDatabaseThatCannotAnswerLeavesTheQueueGaugesOutWithoutHoldingTheScrape() async {
        let metrics = Metrics()
        PushMetrics.register(in: metrics, store: Self.unreachableStore(), timeout: .milliseconds(300))
        let started = ContinuousClock.now
        let text = await metrics.scrape()
        #expect(ContinuousClock.now - started < .seconds(45))
        #expect(!text.contains("nimbus_push_queue_depth"), "\(text)")
        #expect(text.contains("nimbus_push_sent_total 0\n"))
    }

    @Test func theQueueIsReadFromTheDatabaseAtEachScrape() async throws {
        try await StoreFixture.with { fixture in
            let store = try await Store.open(pool: fixture.pool, push: PushSettings(mode: .direct, topics: ["iCloud.test.App": "com.test.App"]))
            let metrics = Metrics()
            PushMetrics.register(in: metrics, store: store)
            #expect(await metrics.scrape().contains("nimbus_push_queue_depth 0\n"))
            let mac = try await fixture.session(user: "alice", device: "mac")
            let phone = try await fixture.session(user: "alice", device: "phone")
            try await store.pushRegistrations.register(phone, PushRegistrationRequest(apnsEnvironment: .production, apnsToken: String(repeating: "ab", count: 32)))
            let subscription = try Subscription.parse(.object([
                "subscriptionID": "events", "subscriptionType": "query", "query": .object(["recordType": "Note"]),
                "notificationInfo": .object(["title": "Blocked"]),
            ]), schema: [:], limits: Limits())
            _ = try await store.subscriptions.modifySubscriptions(mac, operations: [.save(subscription, mustExist: false)])
            let create = RecordOperation(kind: .create, recordName: "n1", recordType: "Note", changeTag: nil, fields: [])
            _ = try await store.records.modifyRecords(mac, zoneName: "_defaultZone", operations: [.success(create)], atomic: true, limits: Limits())
            let text = await metrics.scrape()
            #expect(text.contains("nimbus_push_queue_depth 1\n"), "\(text)")
            #expect(text.contains("nimbus_push_queued_total 1\n"), "\(text)")
            #expect(text.contains("# TYPE nimbus_push_queue_oldest_age_seconds gauge\n"), "\(text)")
        }
    }

    @Test func aDatabaseThatDoesNotAnswerInTimeLeavesTheQueueGaugesOut() async throws {
        // A listening socket nobody accepts on: the TCP connect succeeds and libpq then waits for
        // a server that never speaks.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        // libpq would wait 60 s for it; the scrape waits 300 ms. The bound only tells the two apart:
        // in a full parallel test run the process's threads can be busy for seconds elsewhere.
        var configuration = PGPool.Configuration(url: "postgresql://127.0.0.1:\(port)/silent")
        configuration.connectTimeoutSeconds = 60
        let pool = PGPool(configuration: configuration)
        let store = Store(pool: pool, signer: TokenSigner(key: Array(repeating: 7, count: 32)), clock: SystemClock(), hub: ChangeHub())
        let metrics = Metrics()
        PushMetrics.register(in: metrics, store: store, timeout: .milliseconds(300))
        let started = ContinuousClock.now
        let text = await metrics.scrape()
        #expect(ContinuousClock.now - started < .seconds(45))
        #expect(!text.contains("nimbus_push_queue_depth"), "\(text)")
        #expect(text.contains("nimbus_push_queued_total 0\n"))
    }

    static func unreachableStore() -> Store {
        let pool = PGPool(configuration: .init(url: "postgresql://127.0.0.1:1/nimbus-metrics-test-never-connects?connect_timeout=1"))
        return Store(pool: pool, signer: TokenSigner(key: Array(repeating: 7, count: 32)), clock: SystemClock(), hub: ChangeHub())
    }
}
