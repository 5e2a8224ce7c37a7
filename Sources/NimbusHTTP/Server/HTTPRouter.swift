import NimbusSupport

/// Maps method and path to a handler. Static paths are a dictionary lookup; patterns with
/// `:name` segments are matched segment by segment, the most specific first (more fixed
/// segments): a path that a specific pattern matches is that pattern's, so another method on it
/// is 405 even when a catch-all pattern serves that method. `HEAD` is served by the `GET` route.
///
/// Immutable once registration is over: `add` builds the tables (a dictionary of static paths and
/// a tree of pattern segments), and the router is then shared by value, read without a lock; a
/// match walks the tree once over the path's bytes (no memo of earlier matches).
package struct HTTPRouter: Sendable {
    package typealias Handler = HTTPServer.Handler

    /// A matched route: its pattern (the metrics label) and handler.
    package struct Route: Sendable {
        package var method: String
        package var pattern: String
        package var handler: Handler
        /// The names of its `:name` segments, in path order.
        var parameterNames: [String]
        /// How many segments are fixed (not `:name`).
        fileprivate var fixedSegments: Int
        /// Registration order: the first registered wins among equally specific patterns.
        var order: Int
    }

    package enum Match: Sendable {
        case found(Route, parameters: [String: String])
        /// The path exists, not with this method; `allowed` lists the methods that do.
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    private var staticRoutes: [String: [String: Route]] = [:]
    /// Pattern routes, the most specific first (for `routes` and `methods`).
    private var patternRoutes: [Route] = []
    /// The tree of pattern segments; `nodes[0]` is the root (before the path's first `/`).
    private var nodes: [SegmentNode] = [SegmentNode(fixedSegments: 0)]

    /// One segment position of the patterns registered: where each fixed segment or a parameter
    /// leads, and the routes whose pattern ends here (all with the same fixed segments).
    private struct SegmentNode: Sendable {
        var fixed: [FixedEdge] = []
        var parameter: Int?
        var routes: [Route] = []
        /// Fixed segments on the way from the root.
        var fixedSegments: Int
    }

    private struct FixedEdge: Sendable {
        var segment: [UInt8]
        var node: Int
    }

    /// The tree flattened for matching, rebuilt by `add`.
    private var table = HTTPRouteTable()

    package init() {}

    /// Every registered method and pattern (`:name` segments as registered), static routes first.
    package var routes: [(method: String, pattern: String)] {
        let statics = staticRoutes.values.flatMap { $0.values }.sorted { ($0.pattern, $0.method) < ($1.pattern, $1.method) }
        return (statics + patternRoutes).map { ($0.method, $0.pattern) }
    }

    package mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = Self.segments(pattern)
        let fixed = segments.filter { !Self.isParameter($0) }.count
        let names = segments.filter(Self.isParameter).map { String(Substring($0.dropFirst())) }
        let route = Route(method: method, pattern: pattern, handler: handler, parameterNames: names,
                          fixedSegments: fixed, order: patternRoutes.count + staticRoutes.count)
        guard pattern.contains("/:") else {
            staticRoutes[pattern, default: [:]][method] = route
            return
        }
        // Stable: among equally specific patterns, the first registered comes first.
        let index = patternRoutes.firstIndex { $0.fixedSegments < route.fixedSegments } ?? patternRoutes.endIndex
        patternRoutes.insert(route, at: index)
        var node = 0
        var fixedSoFar = 0
        for segment in segments {
            node = Self.isParameter(segment) ? parameterChild(of: node, fixedSegments: fixedSoFar)
                : fixedChild(of: node, Array(segment), fixedSegments: &fixedSoFar)
        }
        nodes[node].routes.append(route)
        table = flattened()
    }

    /// The tree as `HTTPRouteTable`'s arrays (each node's edges and routes contiguous).
    private func flattened() -> HTTPRouteTable {
        var flat = Array(repeating: HTTPRouteTable.Node(), count: nodes.count)
        var edges: [HTTPRouteTable.Edge] = []
        var bytes: [UInt8] = []
        var routes: [Route] = []
        for (index, node) in nodes.enumerated() {
            flat[index].firstEdge = edges.count
            flat[index].edgeCount = node.fixed.count
            for edge in node.fixed {
                edges.append(HTTPRouteTable.Edge(byteStart: bytes.count, byteCount: edge.segment.count, node: edge.node))
                bytes.append(contentsOf: edge.segment)
            }
            flat[index].parameter = node.parameter ?? -1
            flat[index].firstRoute = routes.count
            flat[index].routeCount = node.routes.count
            flat[index].fixedSegments = node.fixedSegments
            routes.append(contentsOf: node.routes)
        }
        return HTTPRouteTable(nodes: flat, edges: edges, bytes: bytes, routes: routes)
    }

    private mutating func parameterChild(of node: Int, fixedSegments: Int) -> Int {
        if let child = nodes[node].parameter { return child }
        nodes.append(SegmentNode(fixedSegments: fixedSegments))
        nodes[node].parameter = nodes.count - 1
        return nodes.count - 1
    }

    private mutating func fixedChild(of node: Int, _ segment: [UInt8], fixedSegments: inout Int) -> Int {
        fixedSegments += 1
        if let edge = nodes[node].fixed.first(where: { $0.segment == segment }) { return edge.node }
        nodes.append(SegmentNode(fixedSegments: fixedSegments))
        nodes[node].fixed.append(FixedEdge(segment: segment, node: nodes.count - 1))
        return nodes.count - 1
    }

    package func match(method: String, path: String) -> Match {
        let lookup = method == "HEAD" ? "GET" : method
        if let byMethod = staticRoutes[path] {
            if let route = byMethod[lookup] { return .found(route, parameters: [:]) }
            return .methodNotAllowed(allowed: Self.allowed(byMethod.keys))
        }
        guard !patternRoutes.isEmpty else { return .notFound }
        var path = path
        let table = table
        return path.withUTF8 { bytes in
            withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: max(table.maxParameters, 1)) { found in
                let outcome = table.match(lookup, bytes, found: found)
                guard let index = outcome.route else {
                    return outcome.allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: Self.allowed(outcome.allowed))
                }
                let route = table.routes[index]
                var parameters: [String: String] = [:]
                parameters.reserveCapacity(outcome.parameterCount)
                for (name, range) in zip(route.parameterNames, found[0..<outcome.parameterCount]) {
                    parameters[name] = Self.decode(UnsafeBufferPointer(rebasing: bytes[range]))
                }
                return .found(route, parameters: parameters)
            }
        }
    }

    /// Whether `decode` gives a value (without making it when there is nothing to decode).
    static func decodes(_ segment: UnsafeBufferPointer<UInt8>) -> Bool {
        !segment.contains(UInt8(ascii: "%")) || decode(segment) != nil
    }

    /// A parameter is its segment percent-decoded (RFC 3986 §2.1); nil when it is not valid
    /// percent-encoded UTF-8 (the pattern does not match then).
    private static func decode(_ segment: UnsafeBufferPointer<UInt8>) -> String? {
        guard segment.contains(UInt8(ascii: "%")) else { return String(decoding: segment, as: UTF8.self) }
        return PercentDecoding.pathSegment(Substring(String(decoding: segment, as: UTF8.self)).utf8)
    }

    /// Every method some route answers (HEAD with GET), for `OPTIONS *` (RFC 9110 §9.3.7).
    package var methods: [String] {
        Self.allowed(staticRoutes.values.flatMap(\.keys) + patternRoutes.map(\.method))
    }

    private static func allowed(_ methods: some Sequence<String>) -> [String] {
        var set = Set(methods)
        if set.contains("GET") { set.insert("HEAD") }
        return set.sorted()
    }

    /// A path's segments, split at `/` over its bytes (splitting its Characters cost more than
    /// the rest of routing).
    private static func segments(_ path: String) -> [Substring.UTF8View] {
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { Substring($0).utf8 }
    }

    private static func isParameter(_ segment: Substring.UTF8View) -> Bool {
        segment.first == UInt8(ascii: ":")
    }
}
