import Testing
import NimbusHTTP

// docs/api.md, "Ambiguous input is refused, never guessed" (HTTP side): two credentials, and an
// absolute-form target whose authority breaks the Host rules. Every split of the input agrees.

@Test func rejectsTwoAuthorizationFields() {
    let outcome = parseEverySplit("GET /limits HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "The request has more than one Authorization header field.")
    #expect(outcome.heads.isEmpty)
}

@Test func acceptsOneAuthorizationField() {
    let outcome = parseEverySplit("GET /limits HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer a\r\n\r\n")
    #expect(outcome.status == nil)
    #expect(outcome.heads.count == 1)
}

@Test(arguments: ["http:///limits", "http://a@b@c/limits", "http://user@host/limits", "http://ho st/x", "http://host:8x/limits",
                  "http://[::1/limits"])
func rejectsAbsoluteFormAuthoritiesThatBreakTheHostRules(target: String) {
    let outcome = parseEverySplit("GET \(target) HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(outcome.status == 400, "\(target)")
    #expect(outcome.heads.isEmpty)
}

@Test(arguments: [("http://sync.example.org:8443/limits", "sync.example.org:8443"), ("http://127.0.0.1/a?b", "127.0.0.1"),
                  ("HTTP://[::1]:80/", "[::1]:80")])
func theAbsoluteFormAuthorityIsTheRequestsAuthority(target: String, authority: String) {
    let outcome = parseEverySplit("GET \(target) HTTP/1.1\r\nHost: other.example\r\n\r\n")
    #expect(outcome.status == nil)
    #expect(outcome.heads.first?.authority == authority)
}

@Test func withoutAnAbsoluteTargetTheHostFieldIsTheAuthority() {
    let outcome = parseEverySplit("GET /limits HTTP/1.1\r\nHost: h.example:81\r\n\r\n")
    #expect(outcome.heads.first?.authority == "h.example:81")
    #expect(parseEverySplit("GET /limits HTTP/1.0\r\n\r\n").heads.first?.authority == nil)
}
