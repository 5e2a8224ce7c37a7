import Foundation
import Testing
@testable import NimbusKit

/// Sealed asset files, 64 KiB segments: round trips at every size edge; a cut, reordered, spliced,
/// flipped, lengthened or moved file is `decryptionFailed` and leaves no plaintext file behind.
@Suite("End-to-end encryption: sealed assets")
struct EncryptedAssetTests {
    let key = AccountKey.generate()
    let context = SealContext(container: "iCloud.com.mirxa.AppLocker", zone: "_defaultZone", recordType: "FailedAuthEvent",
                              recordName: "event-1", field: "photoAsset")

    func withDirectory(_ body: (URL) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-assets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(directory)
    }

    func bytes(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }) }

    @Test func filesOfEverySizeEdgeRoundTrip() throws {
        try withDirectory { directory in
            for size in [0, 1, 65_535, 65_536, 65_537, 131_072, 200_001] {
                let plain = directory.appendingPathComponent("p\(size)"), sealed = directory.appendingPathComponent("s\(size)")
                let back = directory.appendingPathComponent("b\(size)")
                try bytes(size).write(to: plain)
                try AssetSeal.seal(plain, to: sealed, key: key, context: context)
                let sealedSize = try Data(contentsOf: sealed).count
                #expect(sealedSize == AssetSeal.headerSize + (size / 65_536 + 1) * 16 + size, "size \(size)")
                try AssetSeal.open(sealed, to: back, keys: KeyRing([key]), context: context)
                #expect(try Data(contentsOf: back) == bytes(size), "size \(size)")
                #expect(try Data(contentsOf: sealed).range(of: bytes(min(size, 64))) == nil || size < 16)
            }
        }
    }

    @Test func aCutReorderedFlippedLengthenedOrMovedFileIsDecryptionFailed() throws {
        try withDirectory { directory in
            let plain = directory.appendingPathComponent("photo"), sealed = directory.appendingPathComponent("sealed")
            try bytes(3 * 65_536 + 100).write(to: plain)
            try AssetSeal.seal(plain, to: sealed, key: key, context: context)
            let good = try Data(contentsOf: sealed)
            let header = AssetSeal.headerSize, segment = AssetSeal.sealedSegmentSize
            func segmentRange(_ i: Int) -> Range<Int> { header + i * segment ..< min(good.count, header + (i + 1) * segment) }
            var reordered = good
            reordered.replaceSubrange(segmentRange(0), with: good.subdata(in: segmentRange(1)))
            reordered.replaceSubrange(segmentRange(1), with: good.subdata(in: segmentRange(0)))
            var flipped = good
            flipped[header + segment + 10] ^= 1
            // A segment spliced in from another file sealed with the same key for the same field.
            let other = directory.appendingPathComponent("other")
            try AssetSeal.seal(plain, to: other, key: key, context: context)
            var spliced = good
            spliced.replaceSubrange(segmentRange(1), with: try Data(contentsOf: other).subdata(in: segmentRange(1)))
            let tampered: [(String, Data, SealContext)] = [
                ("cut at a segment boundary", good.prefix(header + 3 * segment), context),
                ("cut mid-segment", good.prefix(header + segment + 1000), context),
                ("last segment dropped", good.prefix(header + 2 * segment) + good.suffix(from: header + 3 * segment).prefix(0), context),
                ("segments reordered", reordered, context),
                ("a byte flipped", flipped, context),
                ("a segment spliced from another file", spliced, context),
                ("a byte appended", good + Data([0]), context),
                ("the header's salt changed", Data(good.prefix(6)) + Data([good[6] ^ 1]) + good.suffix(from: 7), context),
                ("moved to another field", good, SealContext(container: context.container, zone: context.zone, recordType: context.recordType,
                                                             recordName: context.recordName, field: "thumbnail")),
                ("moved to another record", good, SealContext(container: context.container, zone: context.zone, recordType: context.recordType,
                                                              recordName: "event-2", field: context.field)),
                ("moved to another zone", good, SealContext(container: context.container, zone: "Other", recordType: context.recordType,
                                                            recordName: context.recordName, field: context.field)),
                ("empty", Data(), context),
            ]
            for (what, data, place) in tampered {
                let input = directory.appendingPathComponent("tampered"), output = directory.appendingPathComponent("out")
                try data.write(to: input)
                do {
                    try AssetSeal.open(input, to: output, keys: KeyRing([key]), context: place)
                    Issue.record("\(what): opened")
                } catch {
                    #expect((error as? NimbusError)?.code == .decryptionFailed, "\(what): \(error)")
                }
                #expect(!FileManager.default.fileExists(atPath: output.path), "\(what): a partial plaintext was left")
            }
            let output = directory.appendingPathComponent("out")
            #expect { try AssetSeal.open(sealed, to: output, keys: KeyRing(), context: self.context) } throws: {
                ($0 as? NimbusError)?.code == .encryptionKeyMissing
            }
        }
    }
}

/// Peak memory of sealing and opening stays bounded by the segment size, not the file's.
@Suite("End-to-end encryption: sealed assets stream")
struct EncryptedAssetStreamTests {
    /// Resident memory in bytes (Linux: /proc/self/statm); nil elsewhere.
    static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let parts = text.split(separator: " ")
        guard parts.count > 1, let pages = Int(parts[1]) else { return nil }
        return pages * 4096
    }

    @Test func fiftyMebibytesSealAndOpenWithResidentMemoryGrowingUnder16MiB() async throws {
        guard let baseline = Self.residentBytes() else { return }  // Linux measures; other platforms skip the bound
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-stream-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = directory.appendingPathComponent("plain"), sealed = directory.appendingPathComponent("sealed")
        let back = directory.appendingPathComponent("back")
        FileManager.default.createFile(atPath: plain.path, contents: nil)
        let writer = try FileHandle(forWritingTo: plain)
        let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        for _ in 0..<50 { writer.write(block) }
        try writer.close()
        let key = AccountKey.generate()
        let context = SealContext(container: "c", zone: "z", recordType: "T", recordName: "r", field: "f")
        let peak = Locked(0)
        let sampling = Locked(true)
        let sampler = Thread {
            while sampling.withLock({ $0 }) {
                if let now = Self.residentBytes() { peak.withLock { $0 = max($0, now - baseline) } }
                usleep(2_000)
            }
        }
        sampler.start()
        let start = Date()
        try AssetSeal.seal(plain, to: sealed, key: key, context: context)
        let sealSeconds = Date().timeIntervalSince(start)
        try AssetSeal.open(sealed, to: back, keys: KeyRing([key]), context: context)
        let openSeconds = Date().timeIntervalSince(start) - sealSeconds
        sampling.withLock { $0 = false }
        let growth = peak.withLock { $0 }
        print("figure: 50 MiB asset seal \(String(format: "%.2f", sealSeconds)) s, open \(String(format: "%.2f", openSeconds)) s, "
            + "resident growth \(growth >> 20) MiB (debug build)")
        #expect(growth < 16 << 20, "resident memory grew \(growth >> 20) MiB")
        #expect(try FileManager.default.attributesOfItem(atPath: back.path)[.size] as? Int == 50 << 20)
    }
}
