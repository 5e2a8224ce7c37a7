import Testing
import NimbusHTTP

@Test(arguments: [
    "GET  / HTTP/1.1\r\n",          // two spaces
    "GET /  HTTP/1.1\r\n",
    " GET / HTTP/1.1\r\n",          // leading space
    "GET / HTTP/1.1 \r\n",          // trailing space
    "GET\t/ HTTP/1.1\r\n",          // HTAB instead of SP
    "GET /\tHTTP/1.1\r\n",
    "GET /\r\n",                    // HTTP/0.9 style
    "GET / \r\n",
    "GET\r\n",
    "GE(T / HTTP/1.1\r\n",          // method not a token
    "G\u{7F}T / HTTP/1.1\r\n",
    "GET / http/1.1\r\n",           // version is case-sensitive
    "GET / HTTP/1.10\r\n",
    "GET / HTTP/1\r\n",
    "GET / HTTP/11\r\n",
    "GET / HTTP/1.x\r\n",
    "GET / HTTPS/1.1\r\n",
    "GET / a HTTP/1.1\r\n",         // space inside the target
])
func rejectsMalformedRequestLine(line: String) {
    let outcome = parseEverySplit(line + "Host: h\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.heads.isEmpty)
}

@Test(arguments: ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0"])
func rejectsOtherWellFormedVersionsWith505(version: String) {
    let outcome = parseEverySplit("GET / \(version)\r\nHost: h\r\n\r\n")
    #expect(outcome.status == 505)
    #expect(outcome.error?.reason == "\(version) is not supported; use HTTP/1.1.")
}

@Test(arguments: [UInt8(0x00), 0x01, 0x09, 0x7F, 0x80, 0xC3, 0xFF])
func rejectsTargetWithControlOrNonASCIIByte(byte: UInt8) {
    let input = Array("GET /a".utf8) + [byte] + Array("b HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
    #expect(parseEverySplit(input).status == 400)
}

@Test func rejectsCRNotFollowedByLFInRequestLine() {
    let outcome = parseEverySplit("GET /a\rb HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "The request-target contains a CR that is not followed by LF.")
}

@Test func rejectsCRBeforeCRLFOfRequestLine() {
    #expect(parseEverySplit("GET / HTTP/1.1\r\r\nHost: h\r\n\r\n").status == 400)
}

@Test func rejectsBareLFAfterRequestLine() {
    let outcome = parseEverySplit("GET / HTTP/1.1\nHost: h\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "A line ends with a bare LF instead of CRLF.")
}

@Test func acceptsEveryTokenCharacterInMethod() {
    let method = "!#$%&'*+-.^_`|~09AZaz"
    #expect(parseEverySplit("\(method) / HTTP/1.1\r\nHost: h\r\n\r\n").head?.method == method)
}

@Test func acceptsVisibleASCIIInTarget() {
    let target = "/a-._~:@!$&'()*+,;=%20[]\"<>\\^`{|}?q=/?"
    let head = parseEverySplit("GET \(target) HTTP/1.1\r\nHost: h\r\n\r\n").head
    #expect(head?.target == target)
    #expect(head?.query == "q=/?")
}

// MARK: - Request line limit

/// A request line of exactly `bytes` bytes without CRLF.
private func requestLine(bytes: Int) -> String {
    let fixed = "GET / HTTP/1.1".utf8.count
    return "GET /" + String(repeating: "a", count: bytes - fixed) + " HTTP/1.1"
}

@Test func acceptsRequestLineAtTheLimit() {
    let outcome = parseEverySplit(requestLine(bytes: 40) + "\r\nHost: h\r\n\r\n", limits: parserLimits(requestLine: 40))
    #expect(outcome.head?.target.utf8.count == 40 - 13)
    #expect(outcome.endCount == 1)
}

@Test func rejectsRequestLineOneByteOverTheLimitWith414() {
    let outcome = parseEverySplit(requestLine(bytes: 41) + "\r\nHost: h\r\n\r\n", limits: parserLimits(requestLine: 40))
    #expect(outcome.status == 414)
    #expect(outcome.error?.reason == "The request line is longer than 40 bytes.")
}

@Test func acceptsRequestLineAtTheDefaultLimit() {
    let outcome = parseEverySplit(requestLine(bytes: 8192) + "\r\nHost: h\r\n\r\n")
    #expect(outcome.head?.target.utf8.count == 8192 - 13)
}

@Test func rejectsRequestLineOverTheDefaultLimitWith414() {
    let outcome = parseEverySplit(requestLine(bytes: 8193) + "\r\nHost: h\r\n\r\n")
    #expect(outcome.status == 414)
    #expect(outcome.error?.reason == "The request line is longer than 8192 bytes.")
}

@Test func rejectsEndlessRequestLineWith414BeforeItsEnd() {
    // No LF ever arrives: the limit fires once 41 bytes are in, whatever the split.
    let outcome = parseEverySplit("GET /" + String(repeating: "a", count: 36), limits: parserLimits(requestLine: 40))
    #expect(outcome.status == 414)
    #expect(parseEverySplit("GET /" + String(repeating: "a", count: 35), limits: parserLimits(requestLine: 40)).error == nil)
}

@Test func countsAFinalCRAsPossibleLineEndAtTheLimit() {
    // 40 bytes then CR: the CR may start the CRLF, so this is not yet over a 40-byte limit.
    let atLimit = parseEverySplit(requestLine(bytes: 40) + "\r", limits: parserLimits(requestLine: 40))
    #expect(atLimit.error == nil)
    // A CR followed by anything but LF is content, which makes the line too long.
    let over = parseEverySplit(requestLine(bytes: 40) + "\rX", limits: parserLimits(requestLine: 40))
    #expect(over.status == 414)
}

@Test func rejectsTooLongBareLFLineWithItsLimitStatus() {
    // The size check comes first, so the status does not depend on whether the LF arrived yet.
    #expect(parseEverySplit(requestLine(bytes: 41) + "\nHost: h\r\n\r\n", limits: parserLimits(requestLine: 40)).status == 414)
}
