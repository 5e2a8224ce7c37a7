import Foundation
import NimbusHTTP
import NimbusSupport

/// Request counters and a latency histogram, rendered as Prometheus text (`GET /metrics`).
package final class Metrics: Sendable {
    /// Upper bounds of the latency histogram buckets, in seconds.
    static let bucketBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    private struct Series: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private struct Histogram {
        var buckets = [Int](repeating: 0, count: Metrics.bucketBounds.count)
        var count = 0
        var sum = 0.0

        mutating func record(_ seconds: Double) {
            if let bucket = Metrics.bucketBounds.firstIndex(where: { seconds <= $0 }) {
                buckets[bucket] += 1
            }
            count += 1
            sum += seconds
        }
    }

    private struct State {
        var requests: [Series: Int] = [:]
        var latency: [String: Histogram] = [:]
        var recent: RequestRing
    }

    private let state: Lock<State>
    /// Values read at scrape time: gauges, and counters kept elsewhere (name, help, type, value).
    private let readings = Lock<[(name: String, help: String, type: String, read: @Sendable () -> Double)]>([])

    /// `recentRequests`: how many answered requests the console's request log keeps.
    package init(recentRequests: Int = 1000) {
        state = Lock(State(recent: RequestRing(capacity: recentRequests)))
    }

    /// Counts one answered request and its latency (from `start`, a monotonic timestamp); who
    /// asked and the error code go to the console's request log only.
    package func record(route: String, method: String, status: Int, start: UInt64, who: RequestWho? = nil, serverErrorCode: String? = nil,
                        request: HTTPRequest? = nil) {
        let asker = who?.value
        let client = request?.clientAddress ?? "unknown"
        let seconds = Double(monotonicNanoseconds() &- start) / 1e9
        state.withLock { state in
            state.requests[Series(route: route, method: method, status: status), default: 0] += 1
            // In place: a copy taken out and put back copied its buckets on every request.
            state.latency[route, default: Histogram()].record(seconds)
            state.recent.append(RequestRing.Entry(at: Int64(Date().timeIntervalSince1970 * 1000), method: method, route: route,
                                                  status: status, milliseconds: seconds * 1000, user: asker?.user,
                                                  device: asker?.device, serverErrorCode: serverErrorCode,
                                                  client: client))
        }
    }

    /// The last answered requests and the per-minute counts (the console's overview and log).
    package var recentRequests: RequestRing { state.withLock { $0.recent } }

    /// Adds a gauge whose value is read at each scrape.
    package func addGauge(_ name: String, help: String, _ read: @escaping @Sendable () -> Double) {
        readings.withLock { $0.append((name, help, "gauge", read)) }
    }

    /// Adds a counter kept elsewhere (it only grows), read at each scrape.
    package func addCounter(_ name: String, help: String, _ read: @escaping @Sendable () -> Double) {
        readings.withLock { $0.append((name, help, "counter", read)) }
    }

    /// The Prometheus text exposition (version 0.0.4).
    package func render() -> String {
        let (requests, latency) = state.withLock { ($0.requests, $0.latency) }
        var text = "# HELP nimbus_http_requests_total Requests answered, by route pattern, method and status.\n"
        text += "# TYPE nimbus_http_requests_total counter\n"
        for (series, count) in requests.sorted(by: { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }) {
            text += "nimbus_http_requests_total{route=\"\(series.route)\",method=\"\(series.method)\",status=\"\(series.status)\"} \(count)\n"
        }
        text += "# HELP nimbus_http_request_duration_seconds Time from a complete request to its answer.\n"
        text += "# TYPE nimbus_http_request_duration_seconds histogram\n"
        for (route, histogram) in latency.sorted(by: { $0.key < $1.key }) {
            var cumulative = 0
            for (index, bound) in Metrics.bucketBounds.enumerated() {
                cumulative += histogram.buckets[index]
                text += "nimbus_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            text += "nimbus_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(histogram.count)\n"
            text += "nimbus_http_request_duration_seconds_sum{route=\"\(route)\"} \(histogram.sum)\n"
            text += "nimbus_http_request_duration_seconds_count{route=\"\(route)\"} \(histogram.count)\n"
        }
        for reading in readings.withLock({ $0 }) {
            text += "# HELP \(reading.name) \(reading.help)\n# TYPE \(reading.name) \(reading.type)\n\(reading.name) \(Self.format(reading.read()))\n"
        }
        return text
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
