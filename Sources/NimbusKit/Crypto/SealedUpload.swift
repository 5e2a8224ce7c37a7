import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An encrypted asset's upload: its plaintext file, sealed as the request body is sent (64 KiB
/// at a time, never into a temporary file). The salt is fixed before the first attempt
/// (`AssetSeal.salt`), so every attempt sends the same bytes, each from a fresh body that starts
/// at the file's first byte.
///
/// The body's framing differs by platform. swift-corelibs-foundation (Linux) gives libcurl a
/// stream body of unknown length, so it is sent chunked (RFC 9112 §7.1); a `Content-Length` set
/// beside it would go out with `Transfer-Encoding: chunked`, which the server refuses (§6.3). The
/// body ends only with the file: a read or seal error aborts the request (`SealingInputStream`).
/// On Apple platforms the body is a bound stream pair with `Content-Length` (the sealed size), so
/// a body cut by an error fails its request there too.
struct SealedUpload: Sendable {
    /// Which asset of a batch it is: an operation's index, the field, and for an element of an
    /// `ASSETID_LIST` its place in the list (nil for an `ASSETID` field).
    struct Place: Hashable, Sendable {
        var operation: Int
        var field: String
        var element: Int?
    }

    let file: URL
    let key: AccountKey
    let context: SealContext
    let salt: Data
    /// `AssetSeal.sealedSize` of the file's size when it was checked against `maxAssetBytes`.
    let sealedSize: Int64

    func makeReader() throws -> AssetSealReader {
        try AssetSealReader(file: file, key: key, context: context, salt: salt)
    }

    /// A new body for `request` (each attempt gets its own, read from the first byte): the
    /// stream, for asking after the request why it failed (`failure`).
    func attachBody(to request: inout URLRequest) throws -> SealedBody {
        #if canImport(FoundationNetworking)
        let stream = SealingInputStream(self)
        request.httpBodyStream = stream
        return SealedBody(stream: stream)
        #else
        guard let stream = SealedBodyPump.start(self) else {
            throw NimbusError(.invalidArguments, reason: "No bound stream pair for the sealed upload of \(file.lastPathComponent).")
        }
        request.httpBodyStream = stream
        request.setValue(String(sealedSize), forHTTPHeaderField: "Content-Length")
        return SealedBody(stream: nil)
        #endif
    }
}

/// One attempt's body: on Linux the stream, which remembers why it stopped.
struct SealedBody {
    #if canImport(FoundationNetworking)
    let stream: SealingInputStream?
    #else
    let stream: InputStream?
    #endif

    /// The error that cut the body (the file could not be read), if any.
    var failure: NimbusError? {
        #if canImport(FoundationNetworking)
        stream?.failure
        #else
        nil
        #endif
    }
}
