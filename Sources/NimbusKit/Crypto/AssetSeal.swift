import Foundation

/// Sealed assets, streamed file to file one 64 KiB segment at a time (never the whole file in
/// memory). The sealed file:
///
///     01 | key id (4) | salt (16) | segment 0 | segment 1 | … | last segment
///
/// Every segment but the last holds exactly 65,536 plaintext bytes; the last holds fewer (possibly
/// none). Segment i is AES-256-GCM (ciphertext + 16-byte tag) under the file key
/// `HKDF-SHA256(zone key, salt, info "asset", 32)` with nonce `00×7 | i (4, big-endian) | last (00/01)`
/// and associated data `header (21) | 'A' | lp(container) lp(zone) lp(type) lp(record) lp(field)`:
/// a truncated, reordered, spliced or moved segment fails to open.
enum AssetSeal {
    static let segmentSize = 65_536
    static let headerSize = 5 + 16
    static let sealedSegmentSize = segmentSize + Primitives.tagSize

    /// The size of a file of `plaintext` bytes once sealed: the header and a tag per segment
    /// (the last segment, possibly empty, included).
    static func sealedSize(ofPlaintext plaintext: Int64) -> Int64 {
        Int64(headerSize) + plaintext + Int64(Primitives.tagSize) * (plaintext / Int64(segmentSize) + 1)
    }

    /// The largest file whose sealed form is at most `limit` bytes (0 when none fits).
    static func largestPlaintext(sealedWithin limit: Int64) -> Int64 {
        let perSegment = Int64(sealedSegmentSize)
        var plaintext = max(0, (limit - Int64(headerSize)) * Int64(segmentSize) / perSegment)
        while plaintext > 0 && sealedSize(ofPlaintext: plaintext) > limit { plaintext -= 1 }
        while sealedSize(ofPlaintext: plaintext + 1) <= limit { plaintext += 1 }
        return sealedSize(ofPlaintext: plaintext) <= limit ? plaintext : 0
    }

    /// Seals `source` into `destination` with `key`, through the same `AssetSealReader` an
    /// upload body reads (`SealedUpload`).
    static func seal(_ source: URL, to destination: URL, key: AccountKey, context: SealContext,
                     salt: Data = Primitives.random(16)) throws {
        let reader = try AssetSealReader(file: source, key: key, context: context, salt: salt)
        let output = try create(destination)
        defer { try? output.close() }
        while let piece = try reader.next() { try output.write(contentsOf: piece) }
    }

    /// Opens `source` (a sealed file) into `destination`; `decryptionFailed` (and no destination
    /// file) when a segment was changed, moved, dropped or reordered, or the file ends early. The
    /// file is read 1 MiB at a time through `AssetSealOpener`, the same opener a download feeds.
    static func open(_ source: URL, to destination: URL, keys: KeyRing, context: SealContext) throws {
        guard let input = try? FileHandle(forReadingFrom: source) else {
            throw NimbusError(.assetFileNotFound, reason: "The sealed asset \(source.path) cannot be read.")
        }
        defer { try? input.close() }
        do {
            let output = try create(destination)
            defer { try? output.close() }
            var opener = AssetSealOpener(context: context) { keys.key(id: $0) }
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                try opener.receive(chunk) { try output.write(contentsOf: $0) }
            }
            try opener.finish { try output.write(contentsOf: $0) }
        } catch {
            try? FileManager.default.removeItem(at: destination)
            throw (error as? EncryptionError)?.nimbusError ?? error
        }
    }

    static func fileKey(_ key: AccountKey, salt: Data, context: SealContext) -> Data {
        let zoneKey = SealFormat.zoneKey(key.bytes, container: context.container, zone: context.zone)
        return Primitives.hkdf(ikm: zoneKey, salt: salt, info: Data("asset".utf8), length: Primitives.keySize)
    }

    static func nonce(_ index: UInt32, last: Bool) -> Data {
        Data(count: 7) + Data([UInt8(index >> 24), UInt8((index >> 16) & 0xff), UInt8((index >> 8) & 0xff), UInt8(index & 0xff), last ? 1 : 0])
    }

    private static func create(_ url: URL) throws -> FileHandle {
        try? FileManager.default.removeItem(at: url)
        guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = try? FileHandle(forWritingTo: url) else {
            throw NimbusError(.invalidArguments, reason: "Cannot write \(url.path).")
        }
        return handle
    }
}
