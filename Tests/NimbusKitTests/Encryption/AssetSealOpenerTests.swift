import Foundation
import Testing
@testable import NimbusKit

/// The streaming opener a sealed download feeds (`AssetSealOpener`) and the one-pass download
/// (`AssetDownload`): the same plaintext whatever the chunks' sizes, every piece boundary split
/// at every offset; a cut at a segment boundary or bytes after the last segment are
/// `decryptionFailed`; a corrupted byte is `assetCorrupted` when the checksum catches it and
/// `decryptionFailed` when the checksum was made over it; no partial file is ever left.
@Suite("End-to-end encryption: the streaming asset opener")
struct AssetSealOpenerTests {
    let key = AccountKey.generate()
    let context = SealContext(container: "iCloud.com.mirxa.AppLocker", zone: "_defaultZone", recordType: "FailedAuthEvent",
                              recordName: "event-1", field: "photoAsset")
    static let header = AssetSeal.headerSize, segment = AssetSeal.sealedSegmentSize

    func bytes(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }) }

    /// `plaintext` sealed by `AssetSeal.seal` (the format's own writer).
    func sealed(_ plaintext: Data) throws -> Data {
        let directory = temporaryDirectory("opener")
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = directory.appendingPathComponent("p"), sealed = directory.appendingPathComponent("s")
        try plaintext.write(to: plain)
        try AssetSeal.seal(plain, to: sealed, key: key, context: context)
        return try Data(contentsOf: sealed)
    }

    func opener(keys: KeyRing? = nil) -> AssetSealOpener {
        let ring = keys ?? KeyRing([key])
        return AssetSealOpener(context: context) { ring.key(id: $0) }
    }

    /// The plaintext opened from `data` fed in the pieces that `cuts` (offsets) make.
    func open(_ data: Data, cuts: [Int], keys: KeyRing? = nil) throws -> Data {
        var opener = opener(keys: keys)
        var out = Data()
        var start = 0
        for cut in cuts + [data.count] where cut >= start {
            try opener.receive(data.subdata(in: start..<min(cut, data.count))) { out.append($0) }
            start = min(cut, data.count)
        }
        try opener.finish { out.append($0) }
        return out
    }

    func open(_ data: Data, chunk: Int) throws -> Data {
        try open(data, cuts: Array(stride(from: chunk, to: data.count, by: chunk)))
    }

    func isDecryptionFailed(_ error: any Error) -> Bool {
        (error as? EncryptionError)?.nimbusError.code == .decryptionFailed
    }

    @Test func chunksOfEverySizeGiveTheSamePlaintext() throws {
        let (h, s) = (Self.header, Self.segment)
        for size in [0, 100, 65_536, 2 * 65_536 + 100] {
            let plaintext = bytes(size), data = try sealed(plaintext)
            for chunk in Array(1...64) + [h - 1, h, h + 1, s - 1, s, s + 1, h + s - 1, h + s, h + s + 1, 2 * s + 7, data.count] {
                #expect(try open(data, chunk: chunk) == plaintext, "size \(size), chunks of \(chunk)")
            }
        }
    }

    @Test func everyPieceBoundarySplitAtEveryNearbyOffsetGivesTheSamePlaintext() throws {
        let (h, s) = (Self.header, Self.segment)
        let plaintext = bytes(2 * 65_536 + 100), data = try sealed(plaintext)
        // The header's end, each full segment's end, and the file's end; cut 0–40 bytes around each.
        for boundary in [h, h + s, h + 2 * s, data.count] {
            for cut in max(0, boundary - 20)...min(data.count, boundary + 20) {
                #expect(try open(data, cuts: [cut]) == plaintext, "cut at \(cut) (boundary \(boundary))")
                // And three pieces: the boundary's last byte alone.
                #expect(try open(data, cuts: [cut, cut + 1]) == plaintext, "cuts at \(cut), \(cut + 1)")
            }
        }
    }

    @Test func aCutAtASegmentBoundaryIsDecryptionFailedInAnyPieces() throws {
        let (h, s) = (Self.header, Self.segment)
        let data = try sealed(bytes(2 * 65_536 + 100))
        let exact = try sealed(bytes(65_536))  // a full segment, then an empty last one (16 bytes)
        let cutFiles: [(String, Data)] = [
            ("after the header", data.prefix(h)),
            ("after segment 0", data.prefix(h + s)),
            ("after segment 1", data.prefix(h + 2 * s)),
            ("an exact file without its empty last segment", exact.prefix(h + s)),
            ("mid-header", data.prefix(h - 1)),
            ("nothing", Data()),
        ]
        for (what, cut) in cutFiles {
            for chunk in [1, 7, s, max(1, cut.count)] {
                #expect("cut \(what), chunks of \(chunk)") { try open(cut, chunk: chunk) } throws: { isDecryptionFailed($0) }
            }
        }
    }

    @Test func bytesAfterTheLastSegmentAreDecryptionFailed() throws {
        let s = Self.segment
        let data = try sealed(bytes(2 * 65_536 + 100))
        let last = data.suffix(100 + 16)
        for (what, extra) in [("one byte", Data([0])), ("a tag's worth", Data(count: 16)), ("a whole segment", Data(count: s)),
                              ("the last segment again", Data(last)), ("a segment and more", Data(count: s + 5))] {
            for chunk in [1, 13, s, data.count + extra.count] {
                #expect("\(what) appended, chunks of \(chunk)") { try open(data + extra, chunk: chunk) } throws: { isDecryptionFailed($0) }
            }
        }
    }

    @Test func aReorderedSegmentOrAnotherPlaceOrAMissingKeyDoesNotOpen() throws {
        let (h, s) = (Self.header, Self.segment)
        let data = try sealed(bytes(3 * 65_536 + 100))
        var reordered = data
        reordered.replaceSubrange(h..<h + s, with: data.subdata(in: h + s..<h + 2 * s))
        reordered.replaceSubrange(h + s..<h + 2 * s, with: data.subdata(in: h..<h + s))
        #expect { try open(reordered, chunk: 4096) } throws: { isDecryptionFailed($0) }
        let elsewhere = SealContext(container: context.container, zone: context.zone, recordType: context.recordType,
                                    recordName: "event-2", field: context.field)
        var moved = AssetSealOpener(context: elsewhere) { [key] in key.id == $0 ? key : nil }
        #expect { try moved.receive(data) { _ in } } throws: { isDecryptionFailed($0) }
        #expect { try open(data, cuts: [10], keys: KeyRing()) } throws: {
            if case .keyMissing(_, let id)? = $0 as? EncryptionError { return id == key.id }
            return false
        }
    }
}
