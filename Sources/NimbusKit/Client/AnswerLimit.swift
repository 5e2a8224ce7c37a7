import Foundation

/// The most bytes an answer may have: what its request can return, with slack. An answer past it
/// (a proxy or something else posing as the server, streaming without end) is cut off there with
/// `serverResponseBad` instead of being buffered until memory runs out.
struct AnswerLimit: Sendable, Hashable {
    var bytes: Int
    /// What the request returns, for the error ("a records/changes page of at most 200 records").
    var what: String

    /// Answers that hold no records: zones, subscriptions, the user, limits, devices, a receipt.
    /// Thousands of zones or subscriptions fit many times over.
    static let small = AnswerLimit(bytes: 16 << 20, what: "an answer without records")

    /// An answer of at most `count` records (or notifications carrying fields). Each record holds
    /// at most `maxRecordBytes` of fields, whose wire form is at most twice that (an asset gains
    /// its download URL), plus 16 KiB of name, type, tag, times and item error; 1 MiB for the rest.
    static func records(_ count: Int, _ limits: ServerLimits, _ what: String) -> AnswerLimit {
        let perRecord = 2 * limits.maxRecordBytes + (16 << 10)
        let (total, overflow) = max(count, 1).multipliedReportingOverflow(by: perRecord)
        return AnswerLimit(bytes: overflow ? Int.max : total + (1 << 20), what: "\(what) of at most \(count) records")
    }

    /// An asset's bytes: its known `size` (else the server's `maxAssetBytes`), and 64 KiB for an
    /// error answer in their place.
    static func asset(size: Int64?, _ limits: ServerLimits) -> AnswerLimit {
        let bytes = size ?? limits.maxAssetBytes
        return AnswerLimit(bytes: Int(clamping: bytes) + (64 << 10),
                           what: size.map { "the download of an asset of \($0) bytes" } ?? "the download of an asset (maxAssetBytes \(bytes))")
    }

    /// The error for an answer that passed the limit (`received` bytes when it was cut off).
    func exceeded(by received: Int, from url: URL?) -> NimbusError {
        NimbusError(.serverResponseBad, reason: """
            The answer from \(url?.host ?? "the server") to \(url?.path ?? "a request") passed \(bytes) bytes (\(received) when it \
            was cut off), more than \(what) can be; is the server's URL a Nimbus server, and does a proxy in front of it end its answers?
            """)
    }
}
