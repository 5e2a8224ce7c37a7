import Foundation
import NimbusHTTP
import NimbusSupport

/// Request counters and a latency histogram, rendered as Prometheus text (`GET /metrics`).
package final class Metrics: Sendable {
    /// Upper bounds of the latency histogram buckets, in seconds.
    static let bucketBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

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

    /// A route pattern's place in the counters, found once when the route is registered: counting
    /// an answer then hashes no strings.
    package struct Route: Sendable {
        fileprivate let index: Int
    }

    /// One route pattern's answers: counts by method and status (a route has a few of each, so
    /// a list), and its latency histogram.
    private struct RouteSeries {
        let pattern: String
        var answers: [(method: String, status: Int, count: Int)] = []
        var latency = Histogram()

        mutating func count(method: String, status: Int, seconds: Double) {
            latency.record(seconds)
            if let index = answers.firstIndex(where: { $0.status == status && $0.method == method }) {
                answers[index].count += 1
            } else {
                answers.append((method, status, 1))
            }
        }
    }

    private struct State {
        var routes: [RouteSeries] = []
        var routeIndex: [String: Int] = [:]
        var recent: RequestRing
    }

    private let state: Lock<State>
    /// Values read at scrape time: gauges, and counters kept elsewhere (name, help, type, value).
    private let readings = Lock<[(name: String, help: String, type: String, read: @Sendable () -> Double)]>([])
    /// Counters with one label kept elsewhere (name, help, label name, values by label value).
    private let labeledReadings = Lock<[(name: String, help: String, label: String, read: @Sendable () -> [String: Double])]>([])
    /// Families read asynchronously at scrape time (from the database): `scrape()` only.
    private let collectors = Lock<[@Sendable () async -> [Family]]>([])

    /// A metric family a collector read: its samples are unlabelled values.
    package struct Family: Sendable, Equatable {
        package var name: String
        package var help: String
        /// `gauge` or `counter`.
        package var type: String
        package var value: Double

        package init(name: String, help: String, type: String = "gauge", value: Double) {
            self.name = name
            self.help = help
            self.type = type
            self.value = value
        }
    }

    /// `recentRequests`: how many answered requests the console's request log keeps.
    package init(recentRequests: Int = 1000) {
        state = Lock(State(recent: RequestRing(capacity: recentRequests)))
    }

    /// The counters of a route pattern (the same for every call with the same pattern).
    package func route(_ pattern: String) -> Route {
        state.withLock { state in
            if let index = state.routeIndex[pattern] { return Route(index: index) }
            state.routes.append(RouteSeries(pattern: pattern))
            state.routeIndex[pattern] = state.routes.count - 1
            return Route(index: state.routes.count - 1)
        }
    }

    /// Counts one answered request of the route pattern `route`; see `record(_:method:...)`.
    package func record(route: String, method: String, status: Int, start: UInt64, who: RequestWho? = nil, serverErrorCode: String? = nil,
                        request: HTTPRequest? = nil) {
        record(self.route(route), method: method, status: status, start: start, who: who, serverErrorCode: serverErrorCode, request: request)
    }

    /// Counts one answered request and its latency (from `start`, a monotonic timestamp); who
    /// asked and the error code go to the console's request log only.
    package func record(_ route: Route, method: String, status: Int, start: UInt64, who: RequestWho? = nil, serverErrorCode: String? = nil,
                        request: HTTPRequest? = nil) {
        let asker = who?.value
        let seconds = Double(monotonicNanoseconds() &- start) / 1e9
        let at = Int64(Date().timeIntervalSince1970 * 1000)
        let label = Self.methodLabel(method)
        state.withLock { state in
            state.routes[route.index].count(method: label, status: status, seconds: seconds)
            state.recent.append(RequestRing.Entry(at: at, method: method, route: state.routes[route.index].pattern, status: status,
                                                  milliseconds: seconds * 1000, user: asker?.user, device: asker?.device,
                                                  serverErrorCode: serverErrorCode, peer: request?.peer ?? .unknown,
                                                  forwardedClient: request?.forwarded?.client))
        }
    }

    /// The methods counted under their own name: those HTTP defines (RFC 9110 §9, RFC 5789).
    /// Any other method is counted as `other`, so made-up methods cannot grow the series
    /// without bound; the console's request log, a fixed-size ring, keeps the method as sent.
    static let countedMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

    /// The `method` label a request is counted under.
    static func methodLabel(_ method: String) -> String {
        countedMethods.contains(method) ? method : "other"
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

    /// Adds a counter with one label kept elsewhere, read at each scrape. The caller bounds the
    /// label's values (a fixed set): each value is a series of its own.
    package func addLabeledCounter(_ name: String, help: String, label: String, _ read: @escaping @Sendable () -> [String: Double]) {
        labeledReadings.withLock { $0.append((name, help, label, read)) }
    }

    /// Adds families read at each scrape by an async reader (the database); a reader that fails
    /// returns none, and the scrape goes on without them.
    package func addCollector(_ collect: @escaping @Sendable () async -> [Family]) {
        collectors.withLock { $0.append(collect) }
    }

    /// `render()` followed by the collectors' families: what `GET /metrics` answers.
    package func scrape() async -> String {
        var text = render()
        for collect in collectors.withLock({ $0 }) {
            for family in await collect() {
                text += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.type)\n\(family.name) \(Self.format(family.value))\n"
            }
        }
        return text
    }

    /// The Prometheus text exposition (version 0.0.4), without the collectors' families.
    package func render() -> String {
        let routes = state.withLock { $0.routes }.filter { $0.latency.count > 0 }.sorted { $0.pattern < $1.pattern }
        var text = "# HELP nimbus_http_requests_total Requests answered, by route pattern, method and status.\n"
        text += "# TYPE nimbus_http_requests_total counter\n"
        for series in routes {
            for answer in series.answers.sorted(by: { ($0.method, $0.status) < ($1.method, $1.status) }) {
                text += "nimbus_http_requests_total{route=\"\(series.pattern)\",method=\"\(answer.method)\",status=\"\(answer.status)\"} \(answer.count)\n"
            }
        }
        text += "# HELP nimbus_http_request_duration_seconds Time from a complete request to its answer.\n"
        text += "# TYPE nimbus_http_request_duration_seconds histogram\n"
        for (route, histogram) in routes.map({ ($0.pattern, $0.latency) }) {
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
        for reading in labeledReadings.withLock({ $0 }) {
            text += "# HELP \(reading.name) \(reading.help)\n# TYPE \(reading.name) counter\n"
            for (value, count) in reading.read().sorted(by: { $0.key < $1.key }) {
                text += "\(reading.name){\(reading.label)=\"\(Self.escapeLabel(value))\"} \(Self.format(count))\n"
            }
        }
        return text
    }

    /// A label value as the exposition format wants it: backslash, double quote and line feed escaped.
    static func escapeLabel(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
