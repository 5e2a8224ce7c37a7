import Testing
import NimbusHTTP

private func request(_ fields: String, body: String = "", version: String = "HTTP/1.1") -> String {
    "POST /r \(version)\r\nHost: h\r\n\(fields)\r\n\(body)"
}

// MARK: - Content-Length

@Test func acceptsIdenticalDuplicateContentLength() {
    let outcome = parseEverySplit(request("Content-Length: 3\r\nContent-Length: 3\r\n", body: "abc"))
    #expect(outcome.head?.framing == .length(3))
    #expect(outcome.bodies == ["abc"])
}

@Test func acceptsIdenticalContentLengthList() {
    #expect(parseEverySplit(request("Content-Length: 3, 3 ,003\r\n", body: "abc")).head?.framing == .length(3))
}

@Test func rejectsDuplicateContentLength() {
    let outcome = parseEverySplit(request("Content-Length: 3\r\nContent-Length: 4\r\n", body: "abcd"))
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "The request has Content-Length values that differ.")
    #expect(parseEverySplit(request("Content-Length: 3, 4\r\n", body: "abcd")).status == 400)
}

@Test(arguments: ["+3", "-3", "3 3", "0x3", "3a", "", " ", "3,", ",3", "3,,3", "1.0", "99999999999999999999"])
func rejectsInvalidContentLength(value: String) {
    let outcome = parseEverySplit(request("Content-Length: \(value)\r\n", body: "abc"))
    #expect(outcome.status == 400)
    #expect(outcome.heads.isEmpty)
}

@Test func acceptsContentLengthWithLeadingZeros() {
    #expect(parseEverySplit(request("Content-Length: 0003\r\n", body: "abc")).bodies == ["abc"])
}

@Test func acceptsContentLengthOfIntMaxUntilTheBodyLimit() {
    let outcome = parseEverySplit(request("Content-Length: \(Int.max)\r\n"))
    #expect(outcome.head?.framing == .length(Int.max))
    #expect(outcome.status == 413)
}

@Test func acceptsContentLengthBodyAtTheLimit() {
    let outcome = parseEverySplit(request("Content-Length: 10\r\n", body: "0123456789"), limits: parserLimits(body: 10))
    #expect(outcome.bodies == ["0123456789"])
    #expect(outcome.endCount == 1)
}

@Test func rejectsContentLengthBodyOneByteOverTheLimitWith413AfterTheHead() {
    let outcome = parseEverySplit(request("Content-Length: 11\r\n", body: "0123456789A"), limits: parserLimits(body: 10))
    #expect(outcome.head?.framing == .length(11))
    #expect(outcome.status == 413)
    #expect(outcome.error?.reason == "The request body of 11 bytes is larger than the limit of 10 bytes; split it into smaller requests.")
    #expect(outcome.bodies == [""])
}

// MARK: - Transfer-Encoding

@Test func rejectsTransferEncodingWithContentLength() {
    let outcome = parseEverySplit(request("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", body: "0\r\n\r\n"))
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "The request has both Transfer-Encoding and Content-Length.")
}

@Test func rejectsTransferEncodingOnHTTP10() {
    #expect(parseEverySplit(request("Transfer-Encoding: chunked\r\n", body: "0\r\n\r\n", version: "HTTP/1.0")).status == 400)
}

@Test func acceptsChunkedInAnyCase() {
    #expect(parseEverySplit(request("Transfer-Encoding: ChUnKeD\r\n", body: "0\r\n\r\n")).head?.framing == .chunked)
    #expect(parseEverySplit(request("transfer-encoding:chunked \r\n", body: "0\r\n\r\n")).head?.framing == .chunked)
}

@Test(arguments: [
    (["Transfer-Encoding: chunked, chunked"], 400),
    (["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], 400),
    (["Transfer-Encoding: chunked, gzip"], 400),          // known codings, chunked not final
    (["Transfer-Encoding: chunked", "Transfer-Encoding: deflate"], 400),
    (["Transfer-Encoding: "], 400),                        // empty list
    (["Transfer-Encoding: , ,"], 400),
    (["Transfer-Encoding: gzip, chunked"], 501),           // a coding we do not decode
    (["Transfer-Encoding: gzip", "Transfer-Encoding: chunked"], 501),
    (["Transfer-Encoding: identity, chunked"], 501),
    (["Transfer-Encoding: x-foo, chunked"], 501),
    (["Transfer-Encoding: chunked, x-foo"], 501),          // unknown coding wins over misordering
    (["Transfer-Encoding: gzip"], 501),                    // no chunked at all
    (["Transfer-Encoding: x-foo"], 501),
    (["Transfer-Encoding: chunked;q=1"], 501),             // parameters make an unknown coding
])
func rejectsTransferCodingsOtherThanChunkedAlone(fields: [String], status: Int) {
    let head = fields.map { $0 + "\r\n" }.joined()
    #expect(parseEverySplit(request(head, body: "0\r\n\r\n")).status == status)
}

@Test func namesTheUnsupportedCodingIn501() {
    let outcome = parseEverySplit(request("Transfer-Encoding: gzip, chunked\r\n", body: "0\r\n\r\n"))
    #expect(outcome.error == HTTPParseError(
        status: .notImplemented, reason: "The transfer coding \"gzip\" is not supported; only chunked is."
    ))
}
