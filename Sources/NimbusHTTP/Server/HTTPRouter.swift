import NimbusSupport

/// Maps method and path to a handler. Static paths are a dictionary lookup; patterns with
/// `:name` segments are matched segment by segment, the most specific first (more fixed
/// segments): a path that a specific pattern matches is that pattern's, so another method on it
/// is 405 even when a catch-all pattern serves that method. `HEAD` is served by the `GET` route.
package struct HTTPRouter: Sendable {
    package typealias Handler = HTTPServer.Handler

    /// A matched route: its pattern (the metrics label) and handler.
    package struct Route: Sendable {
        package var method: String
        package var pattern: String
        package var handler: Handler
        fileprivate var segments: [Substring.UTF8View]
        /// How many segments are fixed (not `:name`).
        fileprivate var fixedSegments: Int
    }

    package enum Match: Sendable {
        case found(Route, parameters: [String: String])
        /// The path exists, not with this method; `allowed` lists the methods that do.
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    private var staticRoutes: [String: [String: Route]] = [:]
    private var patternRoutes: [Route] = []
    /// Pattern matches by method and path: clients send the same few paths again and again, and
    /// splitting and binding one cost more than parsing the request's head. Bounded: emptied
    /// when full.
    private let matches = Lock<[MatchKey: Match]>([:])
    static let maxCachedMatches = 1_024

    private struct MatchKey: Hashable {
        var method: String
        var path: String
    }

    package init() {}

    /// Every registered method and pattern (`:name` segments as registered), static routes first.
    package var routes: [(method: String, pattern: String)] {
        let statics = staticRoutes.values.flatMap { $0.values }.sorted { ($0.pattern, $0.method) < ($1.pattern, $1.method) }
        return (statics + patternRoutes).map { ($0.method, $0.pattern) }
    }

    package mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = Self.segments(pattern)
        let route = Route(method: method, pattern: pattern, handler: handler, segments: segments,
                          fixedSegments: segments.filter { !Self.isParameter($0) }.count)
        if pattern.contains("/:") {
            // Stable: among equally specific patterns, the first registered matches first.
            let index = patternRoutes.firstIndex { $0.fixedSegments < route.fixedSegments } ?? patternRoutes.endIndex
            patternRoutes.insert(route, at: index)
        } else {
            staticRoutes[pattern, default: [:]][method] = route
        }
        matches.withLock { $0.removeAll() }
    }

    package func match(method: String, path: String) -> Match {
        let lookup = method == "HEAD" ? "GET" : method
        if let byMethod = staticRoutes[path] {
            if let route = byMethod[lookup] { return .found(route, parameters: [:]) }
            return .methodNotAllowed(allowed: Self.allowed(byMethod.keys))
        }
        let key = MatchKey(method: lookup, path: path)
        if let match = matches.withLock({ $0[key] }) { return match }
        let match = matchPattern(method: lookup, path: path)
        if case .found = match {
            matches.withLock { cache in
                if cache.count >= Self.maxCachedMatches { cache.removeAll(keepingCapacity: true) }
                cache[key] = match
            }
        }
        return match
    }

    private func matchPattern(method lookup: String, path: String) -> Match {
        let segments = Self.segments(path)
        var allowed: [String] = []
        var matchedSpecificity: Int?
        for route in patternRoutes {
            // Less specific patterns than one that matched the path do not count.
            if let matchedSpecificity, route.fixedSegments < matchedSpecificity { break }
            guard let parameters = Self.bind(route.segments, to: segments) else { continue }
            if route.method == lookup { return .found(route, parameters: parameters) }
            allowed.append(route.method)
            matchedSpecificity = route.fixedSegments
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: Self.allowed(allowed))
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

    /// Fixed segments match byte for byte; a parameter is its segment percent-decoded (RFC 3986
    /// §2.1), and a segment that is not valid percent-encoded UTF-8 matches no pattern.
    private static func bind(_ pattern: [Substring.UTF8View], to path: [Substring.UTF8View]) -> [String: String]? {
        guard pattern.count == path.count else { return nil }
        // The fixed segments first, without allocating: most routes fail here.
        for (expected, actual) in zip(pattern, path) where !isParameter(expected) {
            if !expected.elementsEqual(actual) { return nil }
        }
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(pattern, path) where isParameter(expected) {
            guard !actual.isEmpty, let value = PercentDecoding.pathSegment(actual) else { return nil }
            parameters[String(Substring(expected.dropFirst()))] = value
        }
        return parameters
    }
}
