import FuzzSupport
import NimbusHTTP

/// The head every input is appended to: the input is a chunked body (chunk-size lines, chunk
/// extensions, data, last chunk, trailers) and whatever a client pipelines after it.
private let chunkedHead = Array("POST /records HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)

/// libFuzzer entry for the chunked decoder: beyond the parser's contract, the decoded body never
/// passes the limit, and a body that ends is followed by the parser's next request.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChunked(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = chunkedHead + Array(UnsafeBufferPointer(start: data, count: size))
    bytes.withUnsafeBytes { input in
        for limits in [HTTPParser.Limits(), smallParserLimits] {
            let outcome = checkSplitIndependence(input, limits: limits)
            checkHeads(outcome, limits: limits)
            guard case .head(let head)? = outcome.items.first else {
                fatalError("the fixed chunked head was not parsed: \(outcome)")
            }
            check(head.framing == .chunked, "the fixed head is not chunked")
        }
    }
    return 0
}
