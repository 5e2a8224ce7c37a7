import Testing
import NimbusHTTP

@Test func trimsWhitespaceAroundValuesAndKeepsNamesAsSent() {
    let head = parseEverySplit("GET / HTTP/1.1\r\nhOsT:h\r\nX-Spaced: \t a  b \t\r\nX-Empty:\r\nX-Blank:   \r\n\r\n").head
    #expect(head?.headers == ["hOsT": "h", "X-Spaced": "a  b", "X-Empty": "", "X-Blank": ""])
    #expect(head?.headers["host"] == "h")
}

@Test func keepsRepeatedFieldsInOrder() {
    let head = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nCookie: a=1\r\nX: y\r\nCookie: b=2\r\n\r\n").head
    #expect(head?.headers.values(for: "cookie") == ["a=1", "b=2"])
    #expect(head?.headers.count == 4)
}

@Test func acceptsObsTextInValues() {
    let input = Array("GET / HTTP/1.1\r\nHost: h\r\nX-Name: Jos".utf8) + [0xC3, 0xA9] + [0x20, 0x80, 0xFF]
        + Array("\r\n\r\n".utf8)
    let head = parseEverySplit(input).head
    // Valid UTF-8 decodes as such; stray obs-text bytes become U+FFFD.
    #expect(head?.headers["x-name"] == "José \u{FFFD}\u{FFFD}")
}

@Test func acceptsVisibleASCIIAndTabInsideValues() {
    let value = "a\tb !\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~"
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nX: \(value)\r\n\r\n").head?.headers["X"] == value)
}

@Test func rejectsObsFold() {
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nX-Long: a\r\n  continued\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "A header line starts with whitespace (obsolete line folding is not accepted).")
    #expect(parseEverySplit("GET / HTTP/1.1\r\n\tHost: h\r\n\r\n").status == 400)
}

@Test func rejectsWhitespaceBetweenFieldNameAndColon() {
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost : h\r\n\r\n").status == 400)
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nContent-Length\t: 0\r\n\r\n").status == 400)
}

@Test func rejectsFieldLineWithoutColon() {
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nNoColonHere\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "A header line has no colon.")
}

@Test func rejectsEmptyFieldName() {
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n: value\r\n\r\n").status == 400)
}

@Test(arguments: [UInt8(0x00), 0x01, 0x08, 0x0B, 0x1F, 0x7F, 0x0D])
func rejectsControlCharacterInValue(byte: UInt8) {
    let input = Array("GET / HTTP/1.1\r\nHost: h\r\nX: a".utf8) + [byte] + Array("b\r\n\r\n".utf8)
    #expect(parseEverySplit(input).status == 400)
}

@Test(arguments: [UInt8(0x00), 0x09, 0x7F, 0x80, UInt8(ascii: "("), UInt8(ascii: "/"), UInt8(ascii: "@")])
func rejectsNonTokenByteInFieldName(byte: UInt8) {
    let input = Array("GET / HTTP/1.1\r\nHost: h\r\nX".utf8) + [byte] + Array("Y: v\r\n\r\n".utf8)
    #expect(parseEverySplit(input).status == 400)
}

@Test func rejectsCRNotFollowedByLFInValue() {
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "The value of a header field contains a CR that is not followed by LF.")
}

@Test func rejectsBareLFInHeaders() {
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n").status == 400)
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\n").status == 400)
}

@Test func rejectsHTTP11WithoutHost() {
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "The HTTP/1.1 request has no Host header field.")
}

@Test func rejectsMoreThanOneHost() {
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: a\r\nHOST: a\r\n\r\n").status == 400)
    #expect(parseEverySplit("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n").status == 400)
}

@Test func acceptsEmptyHost() {
    // RFC 9112 §3.2: an empty Host is what a target without authority calls for.
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost:\r\n\r\n").head?.headers["Host"] == "")
}

// MARK: - Expect

@Test func setsExpectsContinueForHundredContinueInAnyCase() {
    let head = parseEverySplit("PUT /a HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\nx").head
    #expect(head?.expectsContinue == true)
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\r\n").head?.expectsContinue == false)
}

@Test func ignoresHundredContinueOnHTTP10() {
    #expect(parseEverySplit("PUT /a HTTP/1.0\r\nExpect: 100-continue\r\n\r\n").head?.expectsContinue == false)
}

@Test func rejectsOtherExpectationsWith417() {
    let outcome = parseEverySplit("PUT /a HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n")
    #expect(outcome.status == 417)
    #expect(outcome.error?.reason == "The expectation \"200-ok\" cannot be met; only 100-continue is supported.")
    #expect(parseEverySplit("PUT /a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue, foo\r\n\r\n").status == 417)
}

// MARK: - Limits

@Test func acceptsHeaderLineAtTheLimit() {
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\(paddingField(bytes: 30))\r\n\r\n", limits: parserLimits(headerLine: 30))
    #expect(outcome.head?.headers["X-Pad"]?.utf8.count == 23)
}

@Test func rejectsHeaderLineOneByteOverTheLimitWith431() {
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\(paddingField(bytes: 31))\r\n\r\n", limits: parserLimits(headerLine: 30))
    #expect(outcome.status == 431)
    #expect(outcome.error?.reason == "A header field line is longer than 30 bytes.")
}

@Test func rejectsEndlessHeaderLineWith431BeforeItsEnd() {
    #expect(parseEverySplit("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 28), limits: parserLimits(headerLine: 30)).status == 431)
    #expect(parseEverySplit("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 27), limits: parserLimits(headerLine: 30)).error == nil)
}

@Test func acceptsHeaderSectionAtTheLimit() {
    // "Host: h\r\n" is 9 bytes; the padding line adds 40 + 2; the final empty line is not counted.
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\(paddingField(bytes: 40))\r\n\r\n", limits: parserLimits(headerBytes: 51))
    #expect(outcome.endCount == 1)
}

@Test func rejectsHeaderSectionOneByteOverTheLimitWith431() {
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\(paddingField(bytes: 41))\r\n\r\n", limits: parserLimits(headerBytes: 51))
    #expect(outcome.status == 431)
    #expect(outcome.error?.reason == "The header and trailer fields together are larger than 51 bytes.")
}

@Test func namesTheLimitReachedFirstWhenLineAndSectionLimitsMeet() {
    // 20 bytes are left of the section after "Host: h\r\n", less 2 for CRLF: the section limit is
    // reached before the 30-byte line limit, in every split.
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\(paddingField(bytes: 40))\r\n\r\n", limits: parserLimits(headerLine: 30, headerBytes: 29))
    #expect(outcome.error?.reason == "The header and trailer fields together are larger than 29 bytes.")
}

@Test func acceptsHeaderCountAtTheLimit() {
    let fields = (1..<5).map { "X-\($0): v\r\n" }.joined()
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n", limits: parserLimits(headerCount: 5)).head?.headers.count == 5)
}

@Test func rejectsHeaderCountOneOverTheLimitWith431() {
    let fields = (1..<6).map { "X-\($0): v\r\n" }.joined()
    let outcome = parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n", limits: parserLimits(headerCount: 5))
    #expect(outcome.status == 431)
    #expect(outcome.error?.reason == "The request has more than 5 header and trailer fields.")
}

@Test func acceptsHeaderCountAtTheDefaultLimit() {
    let fields = (1..<100).map { "X-\($0): v\r\n" }.joined()
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n").head?.headers.count == 100)
}

@Test func rejectsHeaderCountOverTheDefaultLimitWith431() {
    let fields = (1..<101).map { "X-\($0): v\r\n" }.joined()
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n").status == 431)
}
