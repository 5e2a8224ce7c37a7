import Foundation

extension CKDatabase {
    /// A record save's error as CloudKit gives it: a create over an existing name (the server's
    /// EXISTS) becomes `serverRecordChanged` with the server's copy, and every
    /// `serverRecordChanged` carries the client and ancestor records in its user info.
    static func recordError(_ error: any Error, for record: CKRecord, database: Database) async -> CKError {
        guard var nimbus = error as? NimbusError ?? (error as? CKError)?.underlying else { return CKError(error) }
        if nimbus.code == .constraintViolation, let server = try? await database.record(for: record.record.id) {
            nimbus = NimbusError(.serverRecordChanged, reason: "A record named \(record.recordID.recordName) already exists on the server: "
                + "merge into the server record (CKError.serverRecord) and save that.",
                serverErrorCode: nimbus.serverErrorCode, serverRecord: server, itemName: nimbus.itemName, httpStatus: nimbus.httpStatus)
        }
        guard nimbus.code == .serverRecordChanged else { return CKError(nimbus) }
        var info: [String: Any] = [CKRecordChangedErrorClientRecordKey: record]
        if let server = nimbus.serverRecord { info[CKRecordChangedErrorServerRecordKey] = CKRecord(record: server, database: database) }
        let sent = record.record
        if let base = sent.serverFields {
            var ancestor = sent
            ancestor.fields = base
            info[CKRecordChangedErrorAncestorRecordKey] = CKRecord(record: ancestor, database: database)
        }
        return CKError(nimbus, userInfo: info)
    }
}
