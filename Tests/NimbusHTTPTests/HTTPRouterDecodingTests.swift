@testable import NimbusHTTP
import Testing

/// Path parameters are percent-decoded UTF-8 (RFC 3986 §2.1): a user named `anna maria` or
/// `jürgen` reaches `/api/users/:user/…` as the console's `encodeURIComponent` sends it.
@Suite struct HTTPRouterDecodingTests {
    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.add("GET", "/api/users/:user/devices") { _, _ in }
        return router
    }

    func user(_ path: String) -> String? {
        guard case .found(_, let parameters) = Self.router().match(method: "GET", path: path) else { return nil }
        return parameters["user"]
    }

    @Test func pathParametersArePercentDecodedUTF8() {
        #expect(user("/api/users/anna%20maria/devices") == "anna maria")
        #expect(user("/api/users/j%C3%BCrgen/devices") == "jürgen")
        #expect(user("/api/users/j%c3%bcrgen/devices") == "jürgen", "hex digits in either case")
        #expect(user("/api/users/a%2Fb/devices") == "a/b", "an encoded slash is part of the value, not a separator")
        #expect(user("/api/users/anna+maria/devices") == "anna+maria", "+ is itself in a path")
        #expect(user("/api/users/100%25/devices") == "100%")
        #expect(user("/api/users/plain/devices") == "plain")
    }

    @Test func aSegmentThatIsNotPercentEncodedUTF8MatchesNothing() {
        #expect(user("/api/users/%zz/devices") == nil)
        #expect(user("/api/users/anna%2/devices") == nil)
        #expect(user("/api/users/anna%/devices") == nil)
        #expect(user("/api/users/%FF%FE/devices") == nil, "not UTF-8")
        #expect(user("/api/users/anna%00maria/devices") == nil, "NUL")
    }

    @Test func queryValuesStillDecodePlusAsSpaceAndKeepInvalidEscapes() {
        #expect("anna+maria%21".removingPercentEncodingForQuery() == "anna maria!")
        #expect("100%zz%2".removingPercentEncodingForQuery() == "100%zz%2")
        #expect("j%C3%BCrgen".removingPercentEncodingForQuery() == "jürgen")
    }
}
