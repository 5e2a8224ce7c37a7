import NimbusHTTP

/// Traps with `message` unless `condition` holds. Unlike `precondition`, whose message an optimized
/// build drops, `fatalError` prints it, so a fuzzer report says which property broke.
package func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// What the parser produced for one input: consecutive body events merged, so feeds of the same
/// bytes cut differently compare equal exactly when the parser behaved identically.
package struct ParseOutcome: Equatable, CustomStringConvertible {
    package enum Item: Equatable {
        case head(HTTPRequestHead)
        case body([UInt8])
        case end
        case error(HTTPParseError)
    }

    package var items: [Item] = []

    package var description: String {
        items.map { item in
            switch item {
            case .head(let head): "head(\(head.method) \(head.target.prefix(40)) \(head.framing))"
            case .body(let bytes): "body(\(bytes.count))"
            case .end: "end"
            case .error(let error): "error(\(error))"
            }
        }.joined(separator: ", ")
    }

    mutating func append(body bytes: UnsafeRawBufferPointer) {
        if case .body(let previous) = items.last {
            items[items.count - 1] = .body(previous + bytes)
        } else {
            items.append(.body(Array(bytes)))
        }
    }
}

/// Small limits, so that short fuzz inputs reach every limit check.
package let smallParserLimits: HTTPParser.Limits = {
    var limits = HTTPParser.Limits()
    limits.maxRequestLineBytes = 64
    limits.maxHeaderLineBytes = 48
    limits.maxHeaderBytes = 160
    limits.maxHeaderCount = 6
    limits.maxBodyBytes = 100
    return limits
}()

/// Feeds `input` cut at `cuts` (ascending offsets inside it), looping on each piece the way the
/// connection does, and traps when the parser breaks its contract: consuming more than it was
/// given, a body range outside the piece, `.needMore` with bytes left, an error that does not
/// stick, or no progress.
package func feed(_ input: UnsafeRawBufferPointer, cuts: [Int], limits: HTTPParser.Limits) -> ParseOutcome {
    var parser = HTTPParser(limits: limits)
    var outcome = ParseOutcome()
    var start = 0
    // Every call either consumes a byte or emits an event that needs none (head, end of a
    // bodiless message); more calls than this means the parser spins.
    var budget = 4 * input.count + 64
    for end in cuts + [input.count] {
        let piece = UnsafeRawBufferPointer(rebasing: input[start..<end])
        var offset = 0
        pieceLoop: while true {
            budget -= 1
            check(budget > 0, "the parser made no progress: \(outcome)")
            let rest = UnsafeRawBufferPointer(rebasing: piece[offset...])
            let (consumed, event) = parser.parse(rest)
            check(consumed >= 0 && consumed <= rest.count, "consumed \(consumed) of \(rest.count) bytes")
            switch event {
            case .needMore:
                check(consumed == rest.count, ".needMore left \(rest.count - consumed) bytes unconsumed")
                break pieceLoop
            case .head(let head):
                outcome.items.append(.head(head))
            case .body(let range):
                check(range.lowerBound >= 0 && range.upperBound <= consumed && !range.isEmpty,
                             "body range \(range) outside the \(consumed) consumed bytes")
                outcome.append(body: UnsafeRawBufferPointer(rebasing: rest[range]))
            case .messageEnd:
                outcome.items.append(.end)
            case .error(let error):
                outcome.items.append(.error(error))
                // Terminal: every later call answers the same error and consumes nothing.
                let again = parser.parse(UnsafeRawBufferPointer(rebasing: piece[(offset + consumed)...]))
                check(again.consumed == 0 && again.event == .error(error), "an error did not stick")
                return outcome
            }
            offset += consumed
        }
        start = end
    }
    return outcome
}

/// Feeds `input` whole, byte by byte (when short) and at cut points derived from its bytes, and
/// traps unless every feed gives the same outcome (the parser's split-independence promise).
/// Returns the whole-input outcome.
@discardableResult
package func checkSplitIndependence(_ input: UnsafeRawBufferPointer, limits: HTTPParser.Limits) -> ParseOutcome {
    let whole = feed(input, cuts: [], limits: limits)
    guard input.count > 1 else { return whole }
    if input.count <= 2048 {
        let bytewise = feed(input, cuts: Array(1..<input.count), limits: limits)
        check(bytewise == whole, "byte-at-a-time feed differs:\n  \(bytewise)\nvs whole:\n  \(whole)")
    }
    // FNV-1a of the input seeds a small LCG for up to 8 cut points.
    var seed: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in input { seed = (seed ^ UInt64(byte)) &* 0x100_0000_01b3 }
    var cuts = Set<Int>()
    for _ in 0..<Int(seed % 8) + 1 {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        cuts.insert(1 + Int((seed >> 33) % UInt64(input.count - 1)))
    }
    let split = feed(input, cuts: cuts.sorted(), limits: limits)
    check(split == whole, "feed cut at \(cuts.sorted()) differs:\n  \(split)\nvs whole:\n  \(whole)")
    return whole
}

/// Checks what a head promises: a method and target, a framing consistent with the fields.
package func checkHeads(_ outcome: ParseOutcome, limits: HTTPParser.Limits) {
    for case .head(let head) in outcome.items {
        check(!head.method.isEmpty && !head.target.isEmpty, "a head without method or target")
        check(head.target.utf8.count <= limits.maxRequestLineBytes, "a target longer than the request-line limit")
        check(head.headers.count <= limits.maxHeaderCount, "more fields than maxHeaderCount")
        if case .length(let length) = head.framing { check(length >= 0, "a negative Content-Length") }
    }
    var total = 0
    for item in outcome.items {
        switch item {
        case .head: total = 0
        case .body(let bytes):
            total += bytes.count
            check(total <= limits.maxBodyBytes, "a body of \(total) bytes passed the \(limits.maxBodyBytes)-byte limit")
        default: break
        }
    }
}
