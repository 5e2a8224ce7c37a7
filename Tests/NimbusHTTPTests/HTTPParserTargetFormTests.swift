import Testing
import NimbusHTTP

// Found by the malformed-HTTP corpus (Tests/http-corpus): these targets and Host values used to
// reach the router (404) or the handler (200) instead of being rejected by the parser.

// MARK: - Request-target forms (RFC 9112 §3.2)

@Test(arguments: [
    "limits",              // relative reference
    "./limits",
    "?a=b",                // query only
    "127.0.0.1:80",        // authority-form without CONNECT
    "example.com",
    "ht!tp://x/limits",    // not a scheme
    "1http://x/",          // a scheme starts with a letter
    "http:/x",             // absolute-form needs "//" authority
    "http:",
])
func rejectsTargetsOfNoFormTheMethodMayUse(target: String) {
    let outcome = parseEverySplit("GET \(target) HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.heads.isEmpty)
}

@Test(arguments: ["GET", "POST", "HEAD", "options", "PRI"])
func rejectsAsteriskFormWithoutOPTIONS(method: String) {
    let outcome = parseEverySplit("\(method) * HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "The request-target * is only allowed with OPTIONS.")
}

@Test func answersTheHTTP2PrefaceWith505NotTheAsteriskRule() {
    // The version is judged first: an HTTP/2 client learns the version is the problem.
    #expect(parseEverySplit("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").status == 505)
}

@Test(arguments: ["/limits#top", "/#", "http://h/p#f", "/p?q#f"])
func rejectsTargetsWithAFragment(target: String) {
    let outcome = parseEverySplit("GET \(target) HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "The request-target contains a fragment (#), which a request never carries.")
}

@Test(arguments: ["example.com:443", "/tunnel", "*"])
func answersCONNECTWith501(target: String) {
    let outcome = parseEverySplit("CONNECT \(target) HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
    #expect(outcome.status == 501)
    #expect(outcome.error?.reason == "The CONNECT method is not supported.")
}

@Test(arguments: ["/", "//x/limits", "/a?b", "http://h", "HTTPS://h:1/p?q", "svn+ssh://h/r", "a.b-c://h/"])
func acceptsOriginAndAbsoluteForms(target: String) {
    #expect(parseEverySplit("GET \(target) HTTP/1.1\r\nHost: h\r\n\r\n").head?.target == target)
}

@Test func acceptsAsteriskFormWithOPTIONS() {
    #expect(parseEverySplit("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").head?.path == "*")
}

// MARK: - Host values (RFC 9112 §3.2, RFC 3986 §3.2.2)

@Test(arguments: [
    "x, y", "x y", "user@x", "x/limits", "x:80a", "x:80:81", "[::1", "[]", "[::1]x", "[::1]:8o",
    "caf\u{E9}.example", "x%", "x%4", "x%zz", "x?y", "x#y", "\"x\"",
])
func rejectsInvalidHostValues(host: String) {
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "The Host header field is not a host name or address with an optional port.")
}

@Test(arguments: [
    "", "x", "example.com", "example.com:8080", "127.0.0.1:9", "[::1]", "[::1]:8080", "[v1.fe80::a+en1]",
    "a-b_c.~!$&'()*+,;=%41", "x:", "UPPER.Example",
])
func acceptsValidHostValues(host: String) {
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n").head?.headers["Host"] == host)
}

@Test func checksTheHostOfHTTP10Too() {
    #expect(parseEverySplit("GET / HTTP/1.0\r\nHost: a b\r\n\r\n").status == 400)
    #expect(parseEverySplit("GET / HTTP/1.0\r\n\r\n").error == nil)
}
