import Testing
import NimbusHTTP

@Test func parsesGetWithoutBody() {
    let outcome = parseEverySplit("GET /records/42?zone=main&x=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
    let head = outcome.head
    #expect(head?.method == "GET")
    #expect(head?.target == "/records/42?zone=main&x=1")
    #expect(head?.path == "/records/42")
    #expect(head?.query == "zone=main&x=1")
    #expect(head?.version == .http1_1)
    #expect(head?.headers == ["Host": "example.com", "Accept": "*/*"])
    #expect(head?.keepAlive == true)
    #expect(head?.expectsContinue == false)
    #expect(head?.framing == BodyFraming.none)
    #expect(outcome.items.last == .end)
    #expect(outcome.bodies == [""])
}

@Test func parsesHeadWithoutBody() {
    let outcome = parseEverySplit("HEAD /assets/1 HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(outcome.head?.method == "HEAD")
    #expect(outcome.head?.query == nil)
    #expect(outcome.items.count == 2)
    #expect(outcome.endCount == 1)
}

@Test func keepsMethodCaseAsSent() {
    #expect(parseEverySplit("get / HTTP/1.1\r\nHost: h\r\n\r\n").head?.method == "get")
}

@Test func parsesContentLengthBody() {
    let outcome = parseEverySplit("POST /r HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world")
    #expect(outcome.head?.framing == .length(11))
    #expect(outcome.bodies == ["hello world"])
    #expect(outcome.items.last == .end)
}

@Test func waitsForTheRestOfABody() {
    let outcome = parseEverySplit("POST /r HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nhello")
    #expect(outcome.bodies == ["hello"])
    #expect(outcome.endCount == 0)
    #expect(outcome.error == nil)
}

@Test func parsesZeroContentLengthAsEmptyBody() {
    let outcome = parseEverySplit("POST /r HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
    #expect(outcome.head?.framing == .length(0))
    #expect(outcome.items.count == 2)
}

@Test func parsesThreePipelinedRequestsIncludingChunked() {
    let outcome = parseEverySplit(
        "GET /one HTTP/1.1\r\nHost: h\r\n\r\n"
            + "POST /two HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n"
            + "PUT /three HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"
    )
    #expect(outcome.heads.map(\.path) == ["/one", "/two", "/three"])
    #expect(outcome.heads.map(\.framing) == [.none, .chunked, .length(3)])
    #expect(outcome.bodies == ["", "Wikipedia", "abc"])
    #expect(outcome.endCount == 3)
    #expect(outcome.heads.map(\.keepAlive) == [true, true, false])
}

@Test func ignoresLeadingEmptyLines() {
    let outcome = parseEverySplit(String(repeating: "\r\n", count: 8) + "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(outcome.head?.path == "/")
    #expect(outcome.endCount == 1)
}

@Test func ignoresAnEmptyLineAfterABody() {
    let outcome = parseEverySplit(
        "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n"
    )
    #expect(outcome.heads.map(\.path) == ["/a", "/b"])
    #expect(outcome.endCount == 2)
}

@Test func rejectsMoreThanEightLeadingEmptyLines() {
    let outcome = parseEverySplit(String(repeating: "\r\n", count: 9) + "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(outcome.status == 400)
    #expect(outcome.heads.isEmpty)
}

@Test func rejectsBareLFAsLeadingEmptyLine() {
    #expect(parseEverySplit("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n").status == 400)
}

@Test func parsesAbsoluteFormTarget() {
    let head = parseEverySplit("GET http://example.com:8080/a/b?c=d HTTP/1.1\r\nHost: example.com\r\n\r\n").head
    #expect(head?.target == "http://example.com:8080/a/b?c=d")
    #expect(head?.path == "/a/b")
    #expect(head?.query == "c=d")
}

@Test func givesAbsoluteFormWithoutPathTheRootPath() {
    let head = parseEverySplit("GET https://example.com?q HTTP/1.1\r\nHost: example.com\r\n\r\n").head
    #expect(head?.path == "/")
    #expect(head?.query == "q")
    #expect(HTTPRequestHead.split(target: "http://h").path == "/")
}

@Test func parsesAsteriskTarget() {
    let head = parseEverySplit("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").head
    #expect(head?.path == "*")
    #expect(head?.query == nil)
}

@Test func keepsAnEmptyQueryApartFromNoQuery() {
    #expect(parseEverySplit("GET /p? HTTP/1.1\r\nHost: h\r\n\r\n").head?.query == "")
    #expect(parseEverySplit("GET /p?a?b HTTP/1.1\r\nHost: h\r\n\r\n").head?.query == "a?b")
}

@Test func keepsAuthorityFormTargetWhole() {
    // The parser answers CONNECT with 501 (HTTPParserTargetFormTests); split still keeps it whole.
    let (path, query) = HTTPRequestHead.split(target: "example.com:443")
    #expect(path == "example.com:443")
    #expect(query == nil)
}

@Test func keepsAliveByDefaultOnHTTP11() {
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\r\n").head?.keepAlive == true)
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n").head?.keepAlive == true)
}

@Test func closesHTTP11WhenConnectionListsClose() {
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, CLOSE\r\n\r\n").head?.keepAlive == false)
    #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nConnection: te\r\nConnection: close\r\n\r\n").head?.keepAlive == false)
}

@Test func closesHTTP10UnlessConnectionListsKeepAlive() {
    #expect(parseEverySplit("GET / HTTP/1.0\r\n\r\n").head?.keepAlive == false)
    #expect(parseEverySplit("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").head?.keepAlive == true)
    #expect(parseEverySplit("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n").head?.keepAlive == false)
}

@Test func acceptsHTTP10WithoutHost() {
    let head = parseEverySplit("GET / HTTP/1.0\r\n\r\n").head
    #expect(head?.version == .http1_0)
    #expect(head?.headers.isEmpty == true)
}

@Test func raisingTheBodyLimitAfterTheHeadAdmitsALargerBody() {
    let input = "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\nabcdefghijkl"
        + "POST /plain HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\nabcdefghijkl"
    let outcome = parseEverySplit(input, limits: parserLimits(body: 10)) { parser, head in
        // Only the upload route raises its limit; the next request is back at the configured 10.
        if head.path == "/upload" { parser.maxBodyBytes = 12 }
    }
    #expect(outcome.bodies == ["abcdefghijkl", ""])
    #expect(outcome.heads.map(\.path) == ["/upload", "/plain"])
    #expect(outcome.status == 413)
}

@Test func raisingTheBodyLimitAfterTheHeadAdmitsALargerChunkedBody() {
    let input = "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nC\r\nabcdefghijkl\r\n0\r\n\r\n"
    let outcome = parseEverySplit(input, limits: parserLimits(body: 10)) { parser, _ in parser.maxBodyBytes = 12 }
    #expect(outcome.bodies == ["abcdefghijkl"])
    #expect(outcome.endCount == 1)
}

@Test func isIdleOnlyBetweenRequests() {
    var parser = HTTPParser()
    #expect(parser.isIdle)
    let input = Array("GET / HTTP/1.1\r\nHost: h\r\n\r\nG".utf8)
    input.withUnsafeBytes { bytes in
        let head = parser.parse(bytes)
        #expect(!parser.isIdle)
        let end = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[head.consumed...]))
        #expect(end.event == .messageEnd)
        #expect(parser.isIdle)
        let partial = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[head.consumed...]))
        #expect(partial.event == .needMore)
        #expect(!parser.isIdle)
    }
}
