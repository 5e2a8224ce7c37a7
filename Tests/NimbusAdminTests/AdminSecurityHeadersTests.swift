import NimbusAdmin
import NimbusHTTP
import Testing

/// Every answer of the admin listener carries the console's security headers (docs/console.md
/// "Pages"): pages, JSON, and errors of every kind.
@Suite struct AdminSecurityHeadersTests {
    static let expected = [
        ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]

    func expectSecured(_ answer: AdminAnswer, _ status: Int, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(answer.status == status, "\(what): \(answer)", sourceLocation: sourceLocation)
        for (name, value) in Self.expected {
            #expect(answer.headers.values(for: name) == [value], "\(what): \(name)", sourceLocation: sourceLocation)
        }
    }

    @Test func everyAnswerCarriesTheSecurityHeaders() async throws {
        try await AdminFixture.with { admin in
            expectSecured(await admin.send("GET", "/", token: .some(nil)), 200, "the page")
            expectSecured(await admin.send("GET", "/console.js", token: .some(nil)), 200, "a module")
            expectSecured(await admin.send("GET", "/api/users"), 200, "JSON")
            expectSecured(await admin.send("GET", "/api/users", token: .some(nil)), 401, "no token")
            expectSecured(await admin.send("GET", "/api/users", token: "wrong"), 401, "a wrong token")
            expectSecured(await admin.send("GET", "/api/unknown"), 404, "an unknown route")
            expectSecured(await admin.send("GET", "/nothing.js", token: .some(nil)), 404, "an unknown file")
            expectSecured(await admin.send("DELETE", "/api/users"), 405, "a method the route lacks")
            expectSecured(await admin.send("GET", "/api/users/nobody/devices"), 404, "an unknown user")
            expectSecured(await admin.send("POST", "/api/devices/revoke", body: "not json"), 400, "bad input")
            expectSecured(await admin.send("GET", "/api/audit?limit=0"), 400, "a limit out of range")
        }
    }

    @Test func theHTTPCoresOwnAnswersCarryThemToo() {
        let response = AdminConsole.errorResponse(.contentTooLarge, "The body is larger than 1048576 bytes.")
        let answer = AdminAnswer(status: response.status.code, headers: response.headers, body: response.body)
        expectSecured(answer, 413, "a body over the limit")
        #expect(answer.serverErrorCode == "LIMIT_EXCEEDED")
    }

    @Test func headersAreNotDoubledWhereARouteSetOneItself() {
        var response = HTTPResponse(status: .ok, contentType: "application/octet-stream", body: [])
        response.headers.add(name: "Cache-Control", value: "max-age=60")
        #expect(AdminConsole.secured(response).headers.values(for: "Cache-Control") == ["no-store"])
    }
}
