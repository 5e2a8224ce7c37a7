import Foundation

/// Record lookups, database changes and the `Result` completion-handler forms of CloudKit's
/// iOS 15 API.
extension CKDatabase {
    public typealias QueryResults = (matchResults: [(CKRecord.ID, Result<CKRecord, any Error>)], queryCursor: CKQueryOperation.Cursor?)
    public typealias ModifyResults = (saveResults: [CKRecord.ID: Result<CKRecord, any Error>],
                                      deleteResults: [CKRecord.ID: Result<Void, any Error>])

    /// Several records by ID; a missing one is an `unknownItem` result.
    public func records(for ids: [CKRecord.ID], desiredKeys: [CKRecord.FieldKey]? = nil) async throws
        -> [CKRecord.ID: Result<CKRecord, any Error>] {
        let database = try nimbusDatabase()
        let results: [Result<Record, NimbusError>]
        do { results = try await database.lookup(ids.map(\.nimbus), desiredKeys: desiredKeys) } catch { throw CKError(error) }
        // The found records' assets downloaded (an encrypted one opened, or its record's error).
        let found = results.compactMap { try? $0.get() }
        var opened: [RecordID: Result<CKRecord, any Error>] = [:]
        do {
            for (id, result) in try await opening(found, database) { opened[id.nimbus] = result }
        } catch {
            throw CKError(error)
        }
        var byID: [CKRecord.ID: Result<CKRecord, any Error>] = [:]
        for (id, result) in zip(ids, results) {
            switch result {
            case .success(let record): byID[id] = opened[record.id] ?? .success(CKRecord(record: record, database: database))
            case .failure(let error): byID[id] = .failure(CKError(error))
            }
        }
        return byID
    }

    public func fetch(withRecordIDs recordIDs: [CKRecord.ID], desiredKeys: [CKRecord.FieldKey]? = nil,
                      completionHandler: @escaping (Result<[CKRecord.ID: Result<CKRecord, any Error>], any Error>) -> Void) {
        NimbusCK.completeResult({ try await self.records(for: recordIDs, desiredKeys: desiredKeys) }, completionHandler)
    }

    public func fetch(withQuery query: CKQuery, inZoneWith zoneID: CKRecordZone.ID? = nil, desiredKeys: [CKRecord.FieldKey]? = nil,
                      resultsLimit: Int = CKQueryOperation.maximumResults,
                      completionHandler: @escaping (Result<QueryResults, any Error>) -> Void) {
        NimbusCK.completeResult({ try await self.records(matching: query, inZoneWith: zoneID, desiredKeys: desiredKeys,
                                                         resultsLimit: resultsLimit) }, completionHandler)
    }

    public func fetch(withCursor queryCursor: CKQueryOperation.Cursor, desiredKeys: [CKRecord.FieldKey]? = nil,
                      resultsLimit: Int = CKQueryOperation.maximumResults,
                      completionHandler: @escaping (Result<QueryResults, any Error>) -> Void) {
        NimbusCK.completeResult({ try await self.records(continuingMatchFrom: queryCursor, desiredKeys: desiredKeys,
                                                         resultsLimit: resultsLimit) }, completionHandler)
    }

    public func modifyRecords(saving recordsToSave: [CKRecord], deleting recordIDsToDelete: [CKRecord.ID],
                              savePolicy: SavePolicy = .ifServerRecordUnchanged, atomically: Bool = true,
                              completionHandler: @escaping (Result<ModifyResults, any Error>) -> Void) {
        NimbusCK.completeResult({ try await self.modifyRecords(saving: recordsToSave, deleting: recordIDsToDelete,
                                                               savePolicy: savePolicy, atomically: atomically) }, completionHandler)
    }

    // MARK: - Database changes

    /// What changed in the database: one change per zone.
    public enum DatabaseChange {
        public struct Modification: Sendable {
            public let zoneID: CKRecordZone.ID
        }

        public struct Deletion: Sendable {
            public enum Reason: Sendable { case deleted, purged, encryptedDataReset }
            public let zoneID: CKRecordZone.ID
            public let reason: Reason
        }
    }

    /// The zones changed and deleted since a database token (no token: every zone).
    public func databaseChanges(since changeToken: CKServerChangeToken?, resultsLimit: Int? = nil) async throws
        -> (modifications: [DatabaseChange.Modification], deletions: [DatabaseChange.Deletion], changeToken: CKServerChangeToken,
            moreComing: Bool) {
        let database = try nimbusDatabase()
        do {
            let page = try await database.databaseChanges(since: changeToken?.token, resultsLimit: resultsLimit)
            return (page.changedZones.map { DatabaseChange.Modification(zoneID: CKRecordZone.ID($0)) },
                    page.deletedZones.map { DatabaseChange.Deletion(zoneID: CKRecordZone.ID($0), reason: .deleted) },
                    CKServerChangeToken(page.syncToken), page.moreComing)
        } catch {
            throw CKError(error)
        }
    }

    public func fetchDatabaseChanges(since changeToken: CKServerChangeToken?, resultsLimit: Int? = nil,
                                     completionHandler: @escaping (Result<(modifications: [DatabaseChange.Modification],
                                                                           deletions: [DatabaseChange.Deletion],
                                                                           changeToken: CKServerChangeToken, moreComing: Bool), any Error>) -> Void) {
        NimbusCK.completeResult({ try await self.databaseChanges(since: changeToken, resultsLimit: resultsLimit) }, completionHandler)
    }
}
