import NimbusAPI
import NimbusSupport
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
