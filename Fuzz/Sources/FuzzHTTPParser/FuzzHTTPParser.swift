import FuzzSupport
import NimbusHTTP

/// libFuzzer entry: the input is a raw byte stream from a client (one or more pipelined requests).
/// With the default and with small limits, every way of cutting it must parse the same, and the
/// parser must keep its contract (see FuzzSupport.feed).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    for limits in [HTTPParser.Limits(), smallParserLimits] {
        let outcome = checkSplitIndependence(input, limits: limits)
        checkHeads(outcome, limits: limits)
        for case .head(let head) in outcome.items {
            // The path/query split of every accepted target must not trap either.
            _ = HTTPRequestHead.split(target: head.target)
        }
    }
    return 0
}
