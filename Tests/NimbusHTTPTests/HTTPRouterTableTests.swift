@testable import NimbusHTTP
import Testing

/// The router's segment tree against the linear matcher it replaced (kept here as the reference):
/// random patterns and paths, every answer the same — the route, its parameters, the methods of a
/// 405, a 404.
@Suite struct HTTPRouterTableTests {
    /// The previous matcher: patterns sorted by fixed segments (stable), each split and bound in turn.
    struct Reference {
        struct Pattern { var method: String; var pattern: String; var segments: [Substring]; var fixed: Int }
        var patterns: [Pattern] = []

        mutating func add(_ method: String, _ pattern: String) {
            let segments = pattern.split(separator: "/", omittingEmptySubsequences: false)
            let entry = Pattern(method: method, pattern: pattern, segments: segments, fixed: segments.filter { !$0.hasPrefix(":") }.count)
            let index = patterns.firstIndex { $0.fixed < entry.fixed } ?? patterns.endIndex
            patterns.insert(entry, at: index)
        }

        func match(_ method: String, _ path: String) -> String {
            let lookup = method == "HEAD" ? "GET" : method
            let segments = path.split(separator: "/", omittingEmptySubsequences: false)
            var allowed: Set<String> = []
            var matched: Int?
            for pattern in patterns {
                if let matched, pattern.fixed < matched { break }
                guard let parameters = bind(pattern.segments, segments) else { continue }
                if pattern.method == lookup { return Self.found(pattern.method, pattern.pattern, parameters) }
                allowed.insert(pattern.method)
                matched = pattern.fixed
            }
            if allowed.contains("GET") { allowed.insert("HEAD") }
            return allowed.isEmpty ? "404" : "405 " + allowed.sorted().joined(separator: ",")
        }

        func bind(_ pattern: [Substring], _ path: [Substring]) -> [String: String]? {
            guard pattern.count == path.count else { return nil }
            var parameters: [String: String] = [:]
            for (expected, actual) in zip(pattern, path) {
                if expected.hasPrefix(":") {
                    guard !actual.isEmpty, let value = PercentDecoding.pathSegment(actual.utf8) else { return nil }
                    parameters[String(expected.dropFirst())] = value
                } else if expected != actual {
                    return nil
                }
            }
            return parameters
        }

        static func found(_ method: String, _ pattern: String, _ parameters: [String: String]) -> String {
            "\(method) \(pattern) " + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        }
    }

    static func describe(_ match: HTTPRouter.Match) -> String {
        switch match {
        case .found(let route, let parameters): Reference.found(route.method, route.pattern, parameters)
        case .methodNotAllowed(let allowed): "405 " + allowed.joined(separator: ",")
        case .notFound: "404"
        }
    }

    @Test func theTreeAnswersAsTheLinearMatcherDid() {
        var generator = SystemRandomNumberGenerator()
        let words = ["a", "b", ""]
        let values = ["a", "b", "x%20y", "%zz", "", "j%C3%BCrgen"]
        let methods = ["GET", "POST", "PUT"]
        for _ in 0..<300 {
            var router = HTTPRouter()
            var reference = Reference()
            for index in 0..<Int.random(in: 1...12, using: &generator) {
                let count = Int.random(in: 1...4, using: &generator)
                var segments = (0..<count).map { position in
                    Bool.random(using: &generator) ? ":p\(index)x\(position)" : words.randomElement(using: &generator) ?? "a"
                }
                // At least one parameter: a pattern route (static paths are a dictionary, unchanged).
                if !segments.contains(where: { $0.hasPrefix(":") }) { segments[0] = ":p\(index)" }
                let pattern = "/" + segments.joined(separator: "/")
                let method = methods.randomElement(using: &generator) ?? "GET"
                router.add(method, pattern) { _, _ in }
                reference.add(method, pattern)
            }
            for _ in 0..<200 {
                let count = Int.random(in: 1...5, using: &generator)
                let path = "/" + (0..<count).map { _ in
                    (Bool.random(using: &generator) ? words : values).randomElement(using: &generator) ?? ""
                }.joined(separator: "/")
                for method in methods + ["HEAD", "DELETE"] {
                    let expected = reference.match(method, path)
                    let actual = Self.describe(router.match(method: method, path: path))
                    #expect(actual == expected, "\(method) \(path) with \(reference.patterns.map { "\($0.method) \($0.pattern)" })")
                    if actual != expected { return }
                }
            }
        }
    }

    @Test func theMoreSpecificPatternWinsAndItsMethodsAnswer405() {
        var router = HTTPRouter()
        router.add("GET", "/database/1/:container/:environment/:database/:operation") { _, _ in }
        router.add("POST", "/database/1/:container/:environment/:database/records/modify") { _, _ in }
        router.add("POST", "/database/1/:container/:environment/:database/records/:other") { _, _ in }
        let path = "/database/1/iCloud.a/development/private/records/modify"
        #expect(Self.describe(router.match(method: "POST", path: path))
                == "POST /database/1/:container/:environment/:database/records/modify container=iCloud.a&database=private&environment=development")
        #expect(Self.describe(router.match(method: "GET", path: path)) == "405 POST")
        #expect(Self.describe(router.match(method: "GET", path: "/database/1/c/e/d/zones"))
                == "GET /database/1/:container/:environment/:database/:operation container=c&database=d&environment=e&operation=zones")
    }

    /// The tree is walked fixed edge first, so the less specific pattern can be reached first:
    /// the more specific one still wins, though registered later.
    @Test func specificityCountsTheWholePatternNotTheFirstFixedSegment() {
        var router = HTTPRouter()
        router.add("GET", "/a/:q/:r") { _, _ in }
        router.add("GET", "/:p/b/c") { _, _ in }
        #expect(Self.describe(router.match(method: "GET", path: "/a/b/c")) == "GET /:p/b/c p=a")
        #expect(Self.describe(router.match(method: "GET", path: "/a/b/d")) == "GET /a/:q/:r q=b&r=d")
    }
}
