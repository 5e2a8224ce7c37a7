import NimbusTestSupport
import NimbusCore
import NimbusStore
import Synchronization
import Testing

/// What a record save is told about an ASSETID value whose receipt does not prove its upload
/// (issue 16): no receipt, one this database did not issue, or one for other bytes.
@Suite struct ReceiptProblemTests {
    private static func upload(_ store: Store, _ session: Session, _ bytes: [UInt8]) async throws -> UploadedAsset {
        let ids = try await store.assets.createUploads(session, zoneName: "_defaultZone", requests: [("Photo", "image", "")])
        let pieces = Mutex<[[UInt8]]>([bytes])
        return try await store.assets.upload(session, uploadID: ids[0], next: { pieces.withLock { $0.popLast() } },
                                             maxBytes: 1 << 20, quotaBytes: 1 << 30)
    }

    /// `receipt` with one character in its middle changed.
    private static func altered(_ receipt: String) -> String {
        var characters = Array(receipt)
        let middle = characters.count / 2
        characters[middle] = characters[middle] == "A" ? "B" : "A"
        return String(characters)
    }

    @Test func eachReceiptMistakeGetsItsOwnReasonAndAForeignOneReadsAsAltered() async throws {
        try await StoreFixture.with { fixture in
            let assets = fixture.store.assets
            let alice = try await fixture.session(user: "alice"), bob = try await fixture.session(user: "bob")
            let mine = try await Self.upload(fixture.store, alice, Array(repeating: 7, count: 1000))
            let theirs = try await Self.upload(fixture.store, bob, Array(repeating: 9, count: 1000))
            let valid = AssetValue(fileChecksum: mine.fileChecksum, size: mine.size, receipt: mine.receipt)
            #expect(assets.receiptProblem(valid, databaseID: alice.databaseID) == nil)

            var missing = valid
            missing.receipt = nil
            #expect(assets.receiptProblem(missing, databaseID: alice.databaseID)
                == "the ASSETID value has no receipt; upload the bytes with assets/upload and put the upload's fileChecksum, size and receipt in the field.")

            var forged = valid
            forged.receipt = Self.altered(mine.receipt)
            let forgedReason = assets.receiptProblem(forged, databaseID: alice.databaseID)
            #expect(forgedReason?.hasPrefix("the receipt is not one this database issued (it was altered, or belongs to another user") == true)
            // Bob's genuine receipt must read exactly like a forged one (scenario 80's isolation matrix).
            let foreign = AssetValue(fileChecksum: theirs.fileChecksum, size: theirs.size, receipt: theirs.receipt)
            #expect(assets.receiptProblem(foreign, databaseID: alice.databaseID) == forgedReason)

            var otherChecksum = valid
            otherChecksum.fileChecksum = theirs.fileChecksum
            #expect(assets.receiptProblem(otherChecksum, databaseID: alice.databaseID)
                == "the receipt is for fileChecksum \(mine.fileChecksum) and size 1000, not fileChecksum \(theirs.fileChecksum); "
                + "send the three values as the upload answered them.")
            var otherSize = valid
            otherSize.size = 999
            #expect(assets.receiptProblem(otherSize, databaseID: alice.databaseID)?.contains("and size 1000, not size 999;") == true)
        }
    }
}
