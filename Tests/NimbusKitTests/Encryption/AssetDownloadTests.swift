import Foundation
import Testing
@testable import NimbusKit

/// `AssetDownload`, the one pass a downloaded body takes (hashed, and for a sealed asset opened,
/// as it arrives): which error wins, and that no partial file is left on any end.
@Suite("Asset downloads in one pass")
struct AssetDownloadTests {
    let key = AccountKey.generate()
    let context = SealContext(container: "iCloud.com.mirxa.AppLocker", zone: "_defaultZone", recordType: "FailedAuthEvent",
                              recordName: "event-1", field: "photoAsset")
    let plaintext = Data((0..<(2 * 65_536 + 100)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

    func sealed() throws -> Data {
        let directory = temporaryDirectory("download")
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = directory.appendingPathComponent("p"), sealed = directory.appendingPathComponent("s")
        try plaintext.write(to: plain)
        try AssetSeal.seal(plain, to: sealed, key: key, context: context)
        return try Data(contentsOf: sealed)
    }

    struct Outcome {
        var file: Result<URL, NimbusError>
        /// What the directory holds afterwards.
        var files: [String]
    }

    /// `body` fed in `chunk`-byte pieces to a download into a fresh directory, finished against
    /// `checksum` and `size`.
    func download(_ body: Data, checksum: String, size: Int64?, sealed: Bool, keys: KeyRing? = nil, keyStoreFails: Bool = false,
                  chunk: Int = 4096) throws -> Outcome {
        let directory = temporaryDirectory("download")
        let ring = keys ?? KeyRing([key])
        let opener = sealed ? AssetSealOpener(context: context) { id in
            if keyStoreFails { throw NimbusError(.internalError, reason: "the keychain is locked") }
            return ring.key(id: id)
        } : nil
        let download = try AssetDownload(cache: AssetCache(directory: directory), opener: opener)
        for start in stride(from: 0, to: body.count, by: chunk) { try download.write(body.subdata(in: start..<min(body.count, start + chunk))) }
        let target = directory.appendingPathComponent("target")
        let file = Result { try download.finish(checksum: checksum, size: size, as: target) }.mapError { $0 as? NimbusError ?? NimbusError(.internalError, reason: "\($0)") }
        return Outcome(file: file, files: (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
    }

    func code(_ outcome: Outcome) -> NimbusError.Code? {
        if case .failure(let error) = outcome.file { return error.code }
        return nil
    }

    @Test func aPlainBodyIsHashedOnTheWayAndMovedIntoPlace() throws {
        let body = plaintext
        for chunk in [1_000, 65_536, body.count] {
            let good = try download(body, checksum: Checksum.of(body), size: Int64(body.count), sealed: false, chunk: chunk)
            #expect(try Data(contentsOf: try good.file.get()) == body)
            #expect(good.files == ["target"], "\(good.files)")
        }
        var flipped = body
        flipped[70_000] ^= 1
        let corrupted = try download(flipped, checksum: Checksum.of(body), size: Int64(body.count), sealed: false)
        #expect(code(corrupted) == .assetCorrupted && corrupted.files.isEmpty, "\(corrupted.files)")
        let short = try download(body, checksum: Checksum.of(body), size: Int64(body.count + 1), sealed: false)
        #expect(code(short) == .assetCorrupted && short.files.isEmpty)
    }

    @Test func aSealedBodyLeavesOnlyItsPlaintext() throws {
        let body = try sealed()
        for chunk in [1, 4096, 65_552, body.count] {
            let good = try download(body, checksum: Checksum.of(body), size: Int64(body.count), sealed: true, chunk: chunk)
            #expect(try Data(contentsOf: try good.file.get()) == plaintext, "chunks of \(chunk)")
            #expect(good.files == ["target"], "\(good.files)")
            let mode = try FileManager.default.attributesOfItem(atPath: try good.file.get().path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "the plaintext is the owner's alone")
        }
    }

    @Test func aCorruptedByteIsAssetCorruptedWhenTheChecksumCatchesItElseDecryptionFailed() throws {
        let body = try sealed()
        var flipped = body
        flipped[21 + 65_552 + 10] ^= 1   // in segment 1
        // Corrupted on the way: the checksum is the sealed file's, so it does not match.
        let inTransit = try download(flipped, checksum: Checksum.of(body), size: Int64(body.count), sealed: true)
        #expect(code(inTransit) == .assetCorrupted, "\(inTransit.file)")
        #expect(inTransit.files.isEmpty, "\(inTransit.files)")
        // Changed where it is stored, with a correct-looking checksum made over the changed bytes.
        let stored = try download(flipped, checksum: Checksum.of(flipped), size: Int64(body.count), sealed: true)
        #expect(code(stored) == .decryptionFailed, "\(stored.file)")
        #expect(stored.files.isEmpty, "\(stored.files)")
        // A byte of the first segment: the open fails at once, hashing goes on, the checksum still wins.
        var early = body
        early[30] ^= 1
        let earlyTransit = try download(early, checksum: Checksum.of(body), size: Int64(body.count), sealed: true)
        #expect(code(earlyTransit) == .assetCorrupted, "\(earlyTransit.file)")
        // The right bytes under a wrong size are corrupted too.
        let sized = try download(body, checksum: Checksum.of(body), size: Int64(body.count - 1), sealed: true)
        #expect(code(sized) == .assetCorrupted && sized.files.isEmpty)
    }

    @Test func cutTrailingOrPlaintextBodiesThatMatchTheirChecksumAreDecryptionFailedWithNoFile() throws {
        let body = try sealed()
        let bodies: [(String, Data)] = [
            ("cut at a segment boundary", body.prefix(21 + 2 * 65_552)),
            ("a byte after the last segment", body + Data([0])),
            ("the plaintext in place of the sealed file", plaintext),
        ]
        for (what, bytes) in bodies {
            let outcome = try download(bytes, checksum: Checksum.of(bytes), size: Int64(bytes.count), sealed: true)
            #expect(code(outcome) == .decryptionFailed, "\(what): \(outcome.file)")
            #expect(outcome.files.isEmpty, "\(what): \(outcome.files)")
        }
    }

    @Test func aMissingKeyIsEncryptionKeyMissingUnlessTheBytesAreCorrupted() throws {
        let body = try sealed()
        let missing = try download(body, checksum: Checksum.of(body), size: nil, sealed: true, keys: KeyRing())
        #expect(code(missing) == .encryptionKeyMissing && missing.files.isEmpty)
        let corrupted = try download(body, checksum: Checksum.of(Data()), size: nil, sealed: true, keys: KeyRing())
        #expect(code(corrupted) == .assetCorrupted && corrupted.files.isEmpty)
        // A key store that cannot be read: its error, after the checksum (the bytes are read to the end).
        let locked = try download(body, checksum: Checksum.of(body), size: nil, sealed: true, keyStoreFails: true)
        #expect(code(locked) == .internalError && locked.files.isEmpty, "\(locked.file)")
        let lockedCorrupted = try download(body, checksum: Checksum.of(Data()), size: nil, sealed: true, keyStoreFails: true)
        #expect(code(lockedCorrupted) == .assetCorrupted && lockedCorrupted.files.isEmpty)
    }

    @Test func aDiscardedDownloadLeavesNothing() throws {
        let directory = temporaryDirectory("download")
        let download = try AssetDownload(cache: AssetCache(directory: directory), opener: AssetSealOpener(context: context) { [key] _ in key })
        try download.write(try sealed().prefix(100_000))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count == 1, "the partial file")
        download.discard()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }
}
