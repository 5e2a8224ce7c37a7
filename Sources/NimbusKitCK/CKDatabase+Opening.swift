import Foundation

extension CKDatabase {
    /// Fetched records with their assets downloaded before the fetch returns, in their order: an
    /// encrypted asset (`NimbusCK.configure(encryptedAssetFields:)`) opened, so that its `fileURL`
    /// is the plaintext; a record whose sealed asset does not open here (`decryptionFailed`,
    /// `encryptionKeyMissing`) is that error, never the sealed bytes.
    func opening(_ records: [Record], _ database: Database) async throws -> [(CKRecord.ID, Result<CKRecord, any Error>)] {
        let (readable, unreadable) = try await database.openingAssets(of: records)
        var byID: [RecordID: Result<CKRecord, any Error>] = [:]
        for record in readable { byID[record.id] = .success(CKRecord(record: record, database: database)) }
        for record in unreadable { byID[record.recordID] = .failure(CKError(record.error)) }
        return records.compactMap { record in byID[record.id].map { (CKRecord.ID(record.id), $0) } }
    }
}
