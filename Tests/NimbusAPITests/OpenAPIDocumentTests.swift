import Foundation
import NimbusAPI
import NimbusCore
import NimbusPostgres
import NimbusStore
import NimbusSupport
import Testing

/// The embedded OpenAPI document stays true to the router: every routed method and path is
/// described, and nothing else is.
@Suite struct OpenAPIDocumentTests {
    /// The document as a Foundation object tree.
    private static func document() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8))
        return try #require(object as? [String: Any])
    }

    /// The routes of a real `API` (its store never connects: a pool is lazy).
    private static func routed() -> Set<String> {
        let pool = PGPool(configuration: .init(url: "postgresql:///nimbus-openapi-test-never-connects"))
        let store = Store(pool: pool, signer: TokenSigner(key: Array(repeating: 7, count: 32)), clock: SystemClock(), hub: ChangeHub())
        let api = API(store: store, limits: Limits())
        return Set(api.routedPaths.map { "\($0.method) \(normalised($0.path))" })
    }

    /// `:name` and `{name}` parameter segments both become `{}`, so names need not agree.
    private static func normalised(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            segment.hasPrefix(":") || (segment.hasPrefix("{") && segment.hasSuffix("}")) ? "{}" : String(segment)
        }.joined(separator: "/")
    }

    /// Every `maxItems` / `maximum` stands for a limit: it names it (`x-nimbus-limit`) and equals
    /// its default, so the document cannot drift from `/limits` (Int64's own bound excepted).
    @Test func everyMaximumIsTheDefaultOfTheLimitItNames() throws {
        let defaults = Dictionary(Limits().namedValues.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        var checked = 0
        func walk(_ node: Any, _ path: String) {
            if let object = node as? [String: Any] {
                for key in ["maxItems", "maximum"] {
                    guard let bound = (object[key] as? NSNumber)?.int64Value, bound != Int64.max else { continue }
                    guard let name = object["x-nimbus-limit"] as? String else {
                        Issue.record("\(path): \(key) \(bound) names no limit (x-nimbus-limit)")
                        continue
                    }
                    #expect(defaults[name].map(Int64.init) == bound, "\(path): \(key) \(bound) but \(name) defaults to \(String(describing: defaults[name]))")
                    checked += 1
                }
                for (key, value) in object { walk(value, path + "/" + key) }
            } else if let array = node as? [Any] {
                for (index, value) in array.enumerated() { walk(value, path + "/\(index)") }
            }
        }
        walk(try Self.document(), "")
        #expect(checked >= 9)
    }

    @Test func parsesAsOpenAPI31() throws {
        let document = try Self.document()
        let version = try #require(document["openapi"] as? String)
        #expect(version.hasPrefix("3.1."))
        let schemes = (document["components"] as? [String: Any])?["securitySchemes"] as? [String: Any]
        let bearer = schemes?["bearerAuth"] as? [String: Any]
        #expect(bearer?["type"] as? String == "http")
        #expect(bearer?["scheme"] as? String == "bearer")
    }

    @Test func describesEveryRoutedPathAndNoOther() throws {
        let paths = try #require(try Self.document()["paths"] as? [String: Any])
        let methods = ["get", "post", "put", "patch", "delete", "head", "options"]
        var described = Set<String>()
        for (path, item) in paths {
            let operations = try #require(item as? [String: Any])
            for method in methods where operations[method] != nil {
                described.insert("\(method.uppercased()) \(Self.normalised(path))")
            }
        }
        let routed = Self.routed()
        #expect(routed.count >= 20, "the router lists too few routes: \(routed.sorted())")
        #expect(routed.subtracting(described).sorted() == [], "routed but not in the OpenAPI document")
        #expect(described.subtracting(routed).sorted() == [], "in the OpenAPI document but not routed")
    }

    @Test func everyReferenceResolves() throws {
        let document = try Self.document()
        var missing: [String] = []
        func visit(_ value: Any) {
            if let object = value as? [String: Any] {
                if let target = object["$ref"] as? String {
                    var node: Any? = document
                    for key in target.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(key)] }
                    if node == nil { missing.append(target) }
                }
                object.values.forEach(visit)
            } else if let array = value as? [Any] {
                array.forEach(visit)
            }
        }
        visit(document)
        #expect(missing == [])
    }

    /// The system routes and enrollment (a new device has no token yet) are the only public ones.
    @Test func everyOperationOutsideTheSystemRoutesNeedsTheBearerToken() throws {
        let document = try Self.document()
        let global = document["security"] as? [[String: Any]]
        #expect(global?.first?["bearerAuth"] != nil)
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        for (path, item) in paths {
            for (method, value) in item {
                let operation = try #require(value as? [String: Any])
                let isPublic = (operation["security"] as? [Any])?.isEmpty == true
                let shouldBePublic = ["/healthz", "/limits", "/metrics", "/openapi.json", "/devices/enroll"].contains(path)
                #expect(isPublic == shouldBePublic, "\(method) \(path)")
            }
        }
    }
}
