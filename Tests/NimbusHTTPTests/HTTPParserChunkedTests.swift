import Testing
import NimbusHTTP

private func chunked(_ body: String, trailerFields: String = "") -> String {
    "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\(trailerFields)\r\n\(body)"
}

@Test func decodesChunkedBody() {
    let outcome = parseEverySplit(chunked("5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n"))
    #expect(outcome.head?.framing == .chunked)
    #expect(outcome.bodies == ["hello world"])
    #expect(outcome.endCount == 1)
}

@Test func decodesUpperAndLowerCaseHexSizes() {
    let sixteen = String(repeating: "x", count: 16), twentySeven = String(repeating: "y", count: 0x1B)
    let outcome = parseEverySplit(chunked("A\r\n0123456789\r\n1b\r\n\(twentySeven)\r\n0010\r\n\(sixteen)\r\n000\r\n\r\n"))
    #expect(outcome.bodies == ["0123456789" + twentySeven + sixteen])
}

@Test func ignoresChunkExtensions() {
    let body = "5;name\r\nhello\r\n"
        + "6 ; a=b ;c = \"quoted \\\" ; value\"\r\n world\r\n"
        + "1;x=\"\";y=tok!en\r\n!\r\n"
        + "0;last=yes\r\n\r\n"
    #expect(parseEverySplit(chunked(body)).bodies == ["hello world!"])
}

@Test func discardsTrailerFields() {
    let outcome = parseEverySplit(chunked("3\r\nabc\r\n0\r\nChecksum: xyz\r\nX-Other:  1 \r\n\r\n"))
    #expect(outcome.bodies == ["abc"])
    #expect(outcome.head?.headers.contains(name: "Checksum") == false)
    #expect(outcome.endCount == 1)
}

@Test func waitsForTheLastChunk() {
    let outcome = parseEverySplit(chunked("3\r\nabc\r\n"))
    #expect(outcome.bodies == ["abc"])
    #expect(outcome.endCount == 0)
    #expect(outcome.error == nil)
}

@Test(arguments: [
    "3\r\nabcX\r\n0\r\n\r\n",          // data not followed by CRLF
    "3\r\nabc\n0\r\n\r\n",             // bare LF after data
    "3\r\nabc\rX0\r\n\r\n",            // CR not followed by LF after data
    "3\r\nabcd\r\n0\r\n\r\n",          // more data than the size says
    "\r\nabc\r\n0\r\n\r\n",            // empty size
    "g\r\nabc\r\n0\r\n\r\n",           // not hexadecimal
    "-3\r\nabc\r\n0\r\n\r\n",
    "0x3\r\nabc\r\n0\r\n\r\n",
    " 3\r\nabc\r\n0\r\n\r\n",          // leading whitespace
    "3 \r\nabc\r\n0\r\n\r\n",          // trailing whitespace without extension
    "3;\r\nabc\r\n0\r\n\r\n",          // extension without name
    "3;a=\r\nabc\r\n0\r\n\r\n",        // "=" without value
    "3;a=\"b\r\nabc\r\n0\r\n\r\n",     // unterminated quoted-string
    "3;a=b c\r\nabc\r\n0\r\n\r\n",
    "3;a\u{01}\r\nabc\r\n0\r\n\r\n",   // control character in extension
    "3\nabc\r\n0\r\n\r\n",             // bare LF after size
    "3\r\nabc\r\n0\r\n\n",             // bare LF ending trailers
    "3\r\nabc\r\n0\r\nX:1\n\r\n",      // bare LF after a trailer field
    "3\r\nabc\r\n0\r\n  folded\r\n\r\n", // obs-fold in trailers
    "3\r\nabc\r\n0\r\nNo colon\r\n\r\n",
    "3\r\nabc\r\n0\r\nX: a\u{7F}\r\n\r\n",
    "8000000000000000\r\n",            // Int.max + 1
    "10000000000000000\r\n",           // 17 hex digits
    "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF\r\n",
])
func rejectsMalformedChunkedBody(body: String) {
    #expect(parseEverySplit(chunked(body)).status == 400)
}

@Test func treatsHugeChunkSizeThatFitsAsOverTheBodyLimit() {
    let outcome = parseEverySplit(chunked("0007FFFFFFFFFFFFFFF\r\n"))
    #expect(outcome.status == 413)
}

@Test func acceptsChunkSizeLineAtItsLimit() {
    let extensionText = ";x=" + String(repeating: "a", count: 4096 - 4)
    #expect(parseEverySplit(chunked("1\(extensionText)\r\nz\r\n0\r\n\r\n")).bodies == ["z"])
}

@Test func rejectsChunkSizeLineOverItsLimitWith400() {
    let extensionText = ";x=" + String(repeating: "a", count: 4096 - 3)
    let outcome = parseEverySplit(chunked("1\(extensionText)\r\nz\r\n0\r\n\r\n"))
    #expect(outcome.status == 400)
    #expect(outcome.error?.reason == "A chunk-size line is longer than 4096 bytes.")
}

// MARK: - Limits

@Test func acceptsChunkedBodyAtTheLimit() {
    let outcome = parseEverySplit(chunked("4\r\nabcd\r\n6\r\nefghij\r\n0\r\n\r\n"), limits: parserLimits(body: 10))
    #expect(outcome.bodies == ["abcdefghij"])
    #expect(outcome.endCount == 1)
}

@Test func rejectsChunkedBodyOneByteOverTheLimitWith413() {
    let outcome = parseEverySplit(chunked("4\r\nabcd\r\n7\r\nefghijk\r\n0\r\n\r\n"), limits: parserLimits(body: 10))
    #expect(outcome.status == 413)
    #expect(outcome.error?.reason == "The chunked request body is larger than 10 bytes; split it into smaller requests.")
    // The first chunk was delivered; the one that passes the limit is refused before its bytes.
    #expect(outcome.bodies == ["abcd"])
}

@Test func countsTrailerFieldsTowardTheFieldCountLimit() {
    let atLimit = parseEverySplit(chunked("0\r\nA: 1\r\nB: 2\r\n\r\n"), limits: parserLimits(headerCount: 4))
    #expect(atLimit.endCount == 1)
    let over = parseEverySplit(chunked("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), limits: parserLimits(headerCount: 4))
    #expect(over.status == 431)
}

@Test func countsTrailerBytesTowardTheSectionLimit() {
    // Host (9) + Transfer-Encoding (28) + a trailer of 10 + 2 = 49.
    let atLimit = parseEverySplit(chunked("0\r\n\(paddingField(bytes: 10))\r\n\r\n"), limits: parserLimits(headerBytes: 49))
    #expect(atLimit.endCount == 1)
    let over = parseEverySplit(chunked("0\r\n\(paddingField(bytes: 11))\r\n\r\n"), limits: parserLimits(headerBytes: 49))
    #expect(over.status == 431)
}

@Test func rejectsTrailerLineOverTheLineLimitWith431() {
    let over = parseEverySplit(chunked("0\r\n\(paddingField(bytes: 31))\r\n\r\n"), limits: parserLimits(headerLine: 30))
    #expect(over.status == 431)
    #expect(over.error?.reason == "A trailer field line is longer than 30 bytes.")
}
