import Foundation
import Testing
@testable import NimbusKit

/// The server's `maxAssetBytes` counts the bytes it stores, so an encrypted asset's limit is its
/// sealed size (21 + 16 per 64 KiB segment more than the file): the largest file that fits is
/// saved, one byte more is `limitExceeded` before anything is sealed or uploaded, naming the sizes.
@Suite("Encrypted assets at maxAssetBytes")
struct EncryptedAssetLimitTests {
    @Test func theSealedSizeAndTheLargestFileThatFitsAgreeAtEveryEdge() {
        #expect(AssetSeal.sealedSize(ofPlaintext: 0) == 37)
        #expect(AssetSeal.sealedSize(ofPlaintext: 200_003) == 21 + 200_003 + 4 * 16)
        #expect(AssetSeal.sealedSize(ofPlaintext: 65_536) == 21 + 65_536 + 2 * 16)  // a full segment, then an empty last one
        for limit: Int64 in [37, 38, 65_572, 65_573, 65_574, 300_000, 50 << 20, 1 << 30] {
            let largest = AssetSeal.largestPlaintext(sealedWithin: limit)
            #expect(AssetSeal.sealedSize(ofPlaintext: largest) <= limit, "limit \(limit)")
            #expect(AssetSeal.sealedSize(ofPlaintext: largest + 1) > limit, "limit \(limit)")
        }
        #expect(AssetSeal.largestPlaintext(sealedWithin: 36) == 0)
        #expect(AssetSeal.largestPlaintext(sealedWithin: 50 << 20) == 52_415_979)
    }

    @Test func theLargestFileThatFitsIsSavedAndOneByteMoreIsRefusedNamingTheSizes() async throws {
        let limit: Int64 = 300_000
        let server = try TestServer.start(["--max-asset-bytes", "\(limit)"])
        defer { server.stop() }
        let device = try Device.make(server, token: try server.device(user: "e2e-limit", device: "mac"))
        device.database.container.keyStore = MemoryKeyStore(KeyRing([AccountKey.generate()]))
        device.database.container.encryptedAssetFields = ["Photo": ["image"]]
        let largest = AssetSeal.largestPlaintext(sealedWithin: limit)
        let folder = temporaryDirectory("e2e-limit")
        func photo(_ name: String, size: Int64) throws -> Record {
            let file = folder.appendingPathComponent("\(name).jpg")
            try Data(repeating: 7, count: Int(size)).write(to: file)
            var record = Record(recordType: "Photo", id: RecordID(recordName: name))
            record["image"] = .asset(Asset(fileURL: file))
            return record
        }
        _ = try await device.database.save(try photo("fits", size: largest))
        let fetched = try await device.database.record(for: RecordID(recordName: "fits"))
        #expect(fetched["image"]?.assetValue?.size == AssetSeal.sealedSize(ofPlaintext: largest))

        await #expect {
            _ = try await device.database.save(try photo("too-big", size: largest + 1))
        } throws: { error in
            guard let error = error as? NimbusError, error.code == .limitExceeded else { return false }
            return error.reason.contains("\(largest + 1) bytes") && error.reason.contains("at most \(largest) bytes")
                && error.reason.contains("maxAssetBytes")
        }
        await #expect { _ = try await device.database.record(for: RecordID(recordName: "too-big")) } throws: { error in
            (error as? NimbusError)?.code == .unknownItem
        }
    }
}
