import Foundation

/// A user's private database with CloudKit's method names: the iOS 15 async API and the
/// completion-handler API the apps use.
public final class CKDatabase: Sendable {
    let container: Container?
    let scope: Scope

    init(container: Container?, scope: Scope = .private) {
        self.container = container
        self.scope = scope
    }

    public enum Scope: Int, Sendable { case `public` = 1, `private` = 2, shared = 3 }
    public var databaseScope: Scope { scope }

    /// The NimbusKit database underneath; `notAuthenticated` when no server is configured,
    /// `invalidArguments` naming the entry when `NIMBUS_ENCRYPTED_ASSET_FIELDS` does not parse.
    public func nimbusDatabase() throws -> Database {
        guard let container else {
            throw CKError(NimbusError(.notAuthenticated, reason: "No Nimbus server is configured: call NimbusCK.configure(_:) "
                + "or set NIMBUS_URL and NIMBUS_TOKEN."))
        }
        guard scope == .private else {
            throw CKError(NimbusError(.permissionFailure, reason: "Nimbus serves only the private database: use privateCloudDatabase."))
        }
        if let problem = NimbusCK.applyEncryptedAssetFields(to: container) { throw problem }
        return container.privateDatabase
    }

    private func wrap(_ record: Record, _ database: Database) -> CKRecord { CKRecord(record: record, database: database) }

    // MARK: - Records

    /// Creates a new record or saves the changed fields of a fetched one (its change tag is checked).
    public func save(_ record: CKRecord) async throws -> CKRecord {
        let database = try nimbusDatabase()
        do {
            let saved = wrap(try await database.save(record.record), database)
            saved.parent = record.parent
            return saved
        } catch {
            throw await CKDatabase.recordError(error, for: record, database: database)
        }
    }

    public func save(_ record: CKRecord, completionHandler: @escaping (CKRecord?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.save(record) }, completionHandler)
    }

    public func record(for recordID: CKRecord.ID) async throws -> CKRecord {
        let database = try nimbusDatabase()
        do {
            let record = try await database.record(for: recordID.nimbus)
            return try await opening([record], database)[0].1.get()
        } catch {
            throw CKError(error)
        }
    }

    public func fetch(withRecordID recordID: CKRecord.ID, completionHandler: @escaping (CKRecord?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.record(for: recordID) }, completionHandler)
    }

    @discardableResult
    public func deleteRecord(withID recordID: CKRecord.ID) async throws -> CKRecord.ID {
        let database = try nimbusDatabase()
        do { try await database.delete(recordID.nimbus) } catch { throw CKError(error) }
        return recordID
    }

    public func delete(withRecordID recordID: CKRecord.ID, completionHandler: @escaping (CKRecord.ID?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.deleteRecord(withID: recordID) }, completionHandler)
    }

    public enum SavePolicy: Int, Sendable { case ifServerRecordUnchanged = 0, changedKeys = 1, allKeys = 2 }

    public func modifyRecords(saving recordsToSave: [CKRecord], deleting recordIDsToDelete: [CKRecord.ID],
                              savePolicy: SavePolicy = .ifServerRecordUnchanged, atomically: Bool = true) async throws
        -> (saveResults: [CKRecord.ID: Result<CKRecord, any Error>], deleteResults: [CKRecord.ID: Result<Void, any Error>]) {
        let database = try nimbusDatabase()
        let saves: [RecordOperation] = recordsToSave.map { ck in
            let record = ck.record
            switch savePolicy {
            case .ifServerRecordUnchanged: return .save(record)
            case .changedKeys: return record.existsOnServer ? .forceUpdate(record) : .create(record)
            case .allKeys: return .forceReplace(record)
            }
        }
        let operations = saves + recordIDsToDelete.map { RecordOperation.delete($0.nimbus) }
        let results: [Result<RecordResult, NimbusError>]
        do { results = try await database.modify(operations, atomic: atomically) } catch { throw CKError(error) }
        var saveResults: [CKRecord.ID: Result<CKRecord, any Error>] = [:]
        var deleteResults: [CKRecord.ID: Result<Void, any Error>] = [:]
        for (index, result) in results.enumerated() {
            let id = CKRecord.ID(operations[index].recordID)
            if index < saves.count {
                saveResults[id] = result.map { outcome -> CKRecord in
                    if case .saved(let record) = outcome {
                        let saved = self.wrap(record, database)
                        saved.parent = recordsToSave[index].parent
                        return saved
                    }
                    return CKRecord(record: operations[index].record ?? Record(recordType: ""))
                }.mapError { $0 as any Error }
                if case .failure(let error) = saveResults[id] {
                    saveResults[id] = .failure(await CKDatabase.recordError(error, for: recordsToSave[index], database: database))
                }
            } else {
                deleteResults[id] = result.map { _ in () }.mapError { CKError($0) }
            }
        }
        return (saveResults, deleteResults)
    }

    // MARK: - Queries and changes

    public func records(matching query: CKQuery, inZoneWith zoneID: CKRecordZone.ID? = nil, desiredKeys: [String]? = nil,
                        resultsLimit: Int = CKQueryOperation.maximumResults) async throws
        -> (matchResults: [(CKRecord.ID, Result<CKRecord, any Error>)], queryCursor: CKQueryOperation.Cursor?) {
        let database = try nimbusDatabase()
        do {
            let page = try await database.query(try query.nimbusQuery(), in: zoneID?.nimbus ?? .default,
                                                resultsLimit: try await limit(resultsLimit), desiredKeys: desiredKeys)
            return (try await opening(page.records, database), page.continuation.map(CKQueryOperation.Cursor.init))
        } catch {
            throw CKError(error)
        }
    }

    public func records(continuingMatchFrom queryCursor: CKQueryOperation.Cursor, desiredKeys: [String]? = nil,
                        resultsLimit: Int = CKQueryOperation.maximumResults) async throws
        -> (matchResults: [(CKRecord.ID, Result<CKRecord, any Error>)], queryCursor: CKQueryOperation.Cursor?) {
        let database = try nimbusDatabase()
        let cursor = queryCursor.cursor
        do {
            let page = try await database.query(cursor.query, in: cursor.zoneID, resultsLimit: try await limit(resultsLimit),
                                                desiredKeys: desiredKeys, continuation: cursor)
            return (try await opening(page.records, database), page.continuation.map(CKQueryOperation.Cursor.init))
        } catch {
            throw CKError(error)
        }
    }

    /// The legacy query call: every page of the query, then the handler.
    public func perform(_ query: CKQuery, inZoneWith zoneID: CKRecordZone.ID?, completionHandler: @escaping ([CKRecord]?, (any Error)?) -> Void) {
        NimbusCK.complete({
            var (results, cursor) = try await self.records(matching: query, inZoneWith: zoneID)
            while let next = cursor {
                let page = try await self.records(continuingMatchFrom: next)
                results += page.matchResults
                cursor = page.queryCursor
            }
            return results.compactMap { try? $0.1.get() }
        }, completionHandler)
    }

    private func limit(_ resultsLimit: Int) async throws -> Int? {
        guard resultsLimit == CKQueryOperation.maximumResults else { return resultsLimit }
        return try await nimbusDatabase().container.limits().maxResultsLimit
    }

    /// A zone's changes since a token (iOS 17's shape).
    public func recordZoneChanges(inZoneWith zoneID: CKRecordZone.ID, since changeToken: CKServerChangeToken?,
                                  desiredKeys: [String]? = nil, resultsLimit: Int? = nil) async throws
        -> (modificationResultsByID: [CKRecord.ID: Result<RecordZoneChange.Modification, any Error>],
            deletions: [RecordZoneChange.Deletion], changeToken: CKServerChangeToken, moreComing: Bool) {
        let database = try nimbusDatabase()
        do {
            let page = try await database.changes(in: zoneID.nimbus, since: changeToken?.token, resultsLimit: resultsLimit,
                                                  desiredKeys: desiredKeys)
            var modifications: [CKRecord.ID: Result<RecordZoneChange.Modification, any Error>] = [:]
            for (id, result) in try await opening(page.modified, database) {
                modifications[id] = result.map { RecordZoneChange.Modification(record: $0) }
            }
            // A record whose encrypted field does not open on this device: its error, never garbage.
            for record in page.unreadable { modifications[CKRecord.ID(record.recordID)] = .failure(CKError(record.error)) }
            let deletions = page.deleted.map { RecordZoneChange.Deletion(recordID: CKRecord.ID($0.id), recordType: $0.recordType ?? "") }
            return (modifications, deletions, CKServerChangeToken(page.syncToken), page.moreComing)
        } catch {
            throw CKError(error)
        }
    }

    public enum RecordZoneChange {
        public struct Modification: Sendable {
            public let record: CKRecord
        }

        public struct Deletion: Sendable {
            public let recordID: CKRecord.ID
            public let recordType: String
        }
    }
}
