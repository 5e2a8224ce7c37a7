import Testing
import NimbusHTTP
import NimbusSupport

/// What a parse produced. Consecutive body events are merged, so outcomes of differently split
/// feeds compare equal exactly when the parser behaved identically.
struct ParseOutcome: Equatable, CustomStringConvertible {
    enum Item: Equatable {
        case head(HTTPRequestHead)
        case body([UInt8])
        case end
        case error(HTTPParseError)
    }

    var items: [Item] = []

    var heads: [HTTPRequestHead] {
        items.compactMap { if case .head(let head) = $0 { head } else { nil } }
    }

    /// The only head; records an issue when there is not exactly one.
    var head: HTTPRequestHead? {
        let heads = heads
        #expect(heads.count == 1, "expected one head in \(self)")
        return heads.first
    }

    /// The body bytes of each message whose head was seen, as text.
    var bodies: [String] {
        var result: [String] = []
        var current: [UInt8]?
        for item in items {
            switch item {
            case .head: current = []
            case .body(let bytes): current?.append(contentsOf: bytes)
            case .end, .error:
                if let body = current { result.append(String(decoding: body, as: UTF8.self)) }
                current = nil
            }
        }
        if let body = current { result.append(String(decoding: body, as: UTF8.self)) }
        return result
    }

    var endCount: Int { items.count { $0 == .end } }

    var error: HTTPParseError? {
        if case .error(let error) = items.last { error } else { nil }
    }

    var status: Int? { error?.status.code }

    mutating func append(body bytes: UnsafeRawBufferPointer) {
        if case .body(let previous) = items.last {
            items[items.count - 1] = .body(previous + bytes)
        } else {
            items.append(.body(Array(bytes)))
        }
    }

    var description: String {
        items.map { item in
            switch item {
            case .head(let head): "head(\(head.method) \(head.target.prefix(40)) \(head.framing))"
            case .body(let bytes): "body(\(bytes.count) bytes)"
            case .end: "end"
            case .error(let error): "error(\(error))"
            }
        }.joined(separator: ", ")
    }
}

/// Feeds `input` cut at `cuts` (ascending offsets), looping on each piece as the event loop does,
/// and checks the contract: `.needMore` consumes everything, body ranges lie in the piece.
func feedParser(
    _ input: [UInt8],
    cuts: [Int],
    limits: HTTPParser.Limits,
    onHead: (inout HTTPParser, HTTPRequestHead) -> Void,
    sourceLocation: SourceLocation
) -> ParseOutcome {
    var parser = HTTPParser(limits: limits)
    var outcome = ParseOutcome()
    let bounds = [0] + cuts + [input.count]
    return input.withUnsafeBytes { all in
        for (start, end) in zip(bounds, bounds.dropFirst()) {
            var offset = start
            var calls = 0
            while true {
                calls += 1
                guard calls < 10_000 else {
                    Issue.record("the parser makes no progress: \(outcome)", sourceLocation: sourceLocation)
                    return outcome
                }
                let rest = UnsafeRawBufferPointer(rebasing: all[offset..<end])
                let (consumed, event) = parser.parse(rest)
                #expect(consumed >= 0 && consumed <= rest.count, sourceLocation: sourceLocation)
                switch event {
                case .needMore:
                    #expect(consumed == rest.count, "needMore left bytes unconsumed", sourceLocation: sourceLocation)
                case .head(let head):
                    outcome.items.append(.head(head))
                    onHead(&parser, head)
                case .body(let range):
                    #expect(!range.isEmpty && range.upperBound <= consumed, sourceLocation: sourceLocation)
                    outcome.append(body: UnsafeRawBufferPointer(rebasing: rest[range]))
                case .messageEnd:
                    outcome.items.append(.end)
                case .error(let error):
                    outcome.items.append(.error(error))
                    // Terminal: the parser keeps answering with the same error.
                    #expect(parser.parse(rest).event == .error(error), sourceLocation: sourceLocation)
                    return outcome
                }
                offset += consumed
                if case .needMore = event { break }
            }
        }
        return outcome
    }
}

/// Parses `input` whole, one byte at a time, and cut into two pieces at every offset (or at many
/// offsets for long inputs); expects identical outcomes and returns the whole-input one.
@discardableResult
func parseEverySplit(
    _ input: [UInt8],
    limits: HTTPParser.Limits = .init(),
    onHead: (inout HTTPParser, HTTPRequestHead) -> Void = { _, _ in },
    sourceLocation: SourceLocation = #_sourceLocation
) -> ParseOutcome {
    let whole = feedParser(input, cuts: [], limits: limits, onHead: onHead, sourceLocation: sourceLocation)
    let bytewise = feedParser(
        input, cuts: Array(input.indices.dropFirst()), limits: limits, onHead: onHead, sourceLocation: sourceLocation
    )
    #expect(bytewise == whole, "one byte at a time: \(bytewise)\nwhole: \(whole)", sourceLocation: sourceLocation)
    let stride = max(1, input.count / 512)
    for cut in Swift.stride(from: 1, to: input.count, by: stride) {
        let split = feedParser(input, cuts: [cut], limits: limits, onHead: onHead, sourceLocation: sourceLocation)
        if split != whole {
            Issue.record("cut at \(cut): \(split)\nwhole: \(whole)", sourceLocation: sourceLocation)
            break
        }
    }
    return whole
}

@discardableResult
func parseEverySplit(
    _ input: String,
    limits: HTTPParser.Limits = .init(),
    onHead: (inout HTTPParser, HTTPRequestHead) -> Void = { _, _ in },
    sourceLocation: SourceLocation = #_sourceLocation
) -> ParseOutcome {
    parseEverySplit(Array(input.utf8), limits: limits, onHead: onHead, sourceLocation: sourceLocation)
}

/// Limits small enough to test at N and N + 1 quickly.
func parserLimits(
    requestLine: Int = 8192, headerLine: Int = 8192, headerBytes: Int = 65536, headerCount: Int = 100,
    body: Int = 8 << 20
) -> HTTPParser.Limits {
    var limits = HTTPParser.Limits()
    limits.maxRequestLineBytes = requestLine
    limits.maxHeaderLineBytes = headerLine
    limits.maxHeaderBytes = headerBytes
    limits.maxHeaderCount = headerCount
    limits.maxBodyBytes = body
    return limits
}

/// A header line `X-Pad: aaa…` of exactly `bytes` bytes without CRLF (at least 7).
func paddingField(bytes: Int, name: String = "X-Pad") -> String {
    name + ": " + String(repeating: "a", count: bytes - name.utf8.count - 2)
}

// MARK: - Properties of the harness's subject itself

@Test func repeatsTheErrorOnEveryLaterCall() {
    var parser = HTTPParser()
    let input = Array("GET / HTTP/1.1\r\nBad Name: x\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
    input.withUnsafeBytes { bytes in
        let first = parser.parse(bytes)
        #expect(first.event == .error(HTTPParseError(status: .badRequest, reason: "A header line has whitespace between the field name and the colon.")))
        let again = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[first.consumed...]))
        #expect(again.event == first.event)
        #expect(again.consumed == 0)
    }
}

@Test func needMoreConsumesAPartialLineAndKeepsIt() {
    var parser = HTTPParser()
    let first = Array("GET /a".utf8), second = Array("bc HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
    let result = first.withUnsafeBytes { parser.parse($0) }
    #expect(result.consumed == first.count)
    #expect(result.event == .needMore)
    let head = second.withUnsafeBytes { parser.parse($0) }
    guard case .head(let parsed) = head.event else {
        Issue.record("expected a head, got \(head.event)")
        return
    }
    #expect(parsed.target == "/abc")
    #expect(head.consumed == second.count)
}

@Test func mutatedRequestsParseIdenticallyUnderEverySplit() {
    let seeds = [
        "GET /a?b=c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.0\r\n\r\n",
        "PUT /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;x=\"y\"\r\nhello\r\nA\r\n0123456789\r\n0\r\nT: v\r\n\r\n",
        "\r\nOPTIONS * HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    ].map { Array($0.utf8) }
    let interesting: [UInt8] = Array("\r\n \t:;,0Fa\"".utf8) + [0x00, 0x7F, 0xC3]
    let small = parserLimits(requestLine: 30, headerLine: 24, headerBytes: 80, headerCount: 4, body: 12)
    var random = SplitMix64(seed: 0x5EED)
    for round in 0..<400 {
        var input = seeds[round % seeds.count]
        for _ in 0...(round % 3) {
            let index = Int.random(in: 0..<input.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: input[index] = interesting.randomElement(using: &random)!
            case 1: input.remove(at: index)
            case 2: input.insert(contentsOf: Array(input[index...].prefix(9)), at: index)
            default: input.insert(contentsOf: [0x0D, 0x0A], at: index)
            }
        }
        parseEverySplit(input, limits: round.isMultiple(of: 2) ? small : .init())
    }
}
