import Foundation

/// Zones with CloudKit's method names (async and completion-handler forms).
extension CKDatabase {
    public func save(_ zone: CKRecordZone) async throws -> CKRecordZone {
        let result = try await modifyRecordZones(saving: [zone], deleting: []).saveResults[zone.zoneID]
        guard let result else { throw CKError(.internalError) }
        return try result.get()
    }

    public func save(_ zone: CKRecordZone, completionHandler: @escaping (CKRecordZone?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.save(zone) }, completionHandler)
    }

    /// Creates zones (an existing one succeeds) and deletes zones with their records.
    public func modifyRecordZones(saving recordZonesToSave: [CKRecordZone], deleting recordZoneIDsToDelete: [CKRecordZone.ID]) async throws
        -> (saveResults: [CKRecordZone.ID: Result<CKRecordZone, any Error>], deleteResults: [CKRecordZone.ID: Result<Void, any Error>]) {
        let database = try nimbusDatabase()
        let results: [Result<ZoneInfo, NimbusError>]
        do {
            results = try await database.modifyZones(saving: recordZonesToSave.map(\.zoneID.nimbus),
                                                     deleting: recordZoneIDsToDelete.map(\.nimbus))
        } catch {
            throw CKError(error)
        }
        var saveResults: [CKRecordZone.ID: Result<CKRecordZone, any Error>] = [:]
        var deleteResults: [CKRecordZone.ID: Result<Void, any Error>] = [:]
        for (index, result) in results.enumerated() {
            if index < recordZonesToSave.count {
                let zone = recordZonesToSave[index]
                saveResults[zone.zoneID] = result.map { _ in zone }.mapError { CKError($0) }
            } else {
                let id = recordZoneIDsToDelete[index - recordZonesToSave.count]
                deleteResults[id] = result.map { _ in () }.mapError { CKError($0) }
            }
        }
        return (saveResults, deleteResults)
    }

    public func modifyRecordZones(saving recordZonesToSave: [CKRecordZone], deleting recordZoneIDsToDelete: [CKRecordZone.ID],
                                  completionHandler: @escaping (Result<(saveResults: [CKRecordZone.ID: Result<CKRecordZone, any Error>],
                                                                        deleteResults: [CKRecordZone.ID: Result<Void, any Error>]), any Error>) -> Void) {
        NimbusCK.completeResult({ try await self.modifyRecordZones(saving: recordZonesToSave, deleting: recordZoneIDsToDelete) },
                                completionHandler)
    }

    /// Every zone of the database, the default zone among them.
    public func allRecordZones() async throws -> [CKRecordZone] {
        let database = try nimbusDatabase()
        do {
            var ids = try await database.zones().map(\.zoneID)
            if !ids.contains(.default) { ids.insert(.default, at: 0) }
            return ids.map { CKRecordZone(zoneID: CKRecordZone.ID($0)) }
        } catch {
            throw CKError(error)
        }
    }

    public func fetchAllRecordZones(completionHandler: @escaping ([CKRecordZone]?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.allRecordZones() }, completionHandler)
    }

    /// One zone; `zoneNotFound` when it does not exist.
    public func recordZone(for zoneID: CKRecordZone.ID) async throws -> CKRecordZone {
        guard let result = try await recordZones(for: [zoneID])[zoneID] else { throw CKError(.internalError) }
        return try result.get()
    }

    public func recordZones(for zoneIDs: [CKRecordZone.ID]) async throws -> [CKRecordZone.ID: Result<CKRecordZone, any Error>] {
        let database = try nimbusDatabase()
        let results: [Result<ZoneInfo, NimbusError>]
        do { results = try await database.lookupZones(zoneIDs.map(\.nimbus)) } catch { throw CKError(error) }
        var byID: [CKRecordZone.ID: Result<CKRecordZone, any Error>] = [:]
        for (id, result) in zip(zoneIDs, results) { byID[id] = result.map { _ in CKRecordZone(zoneID: id) }.mapError { CKError($0) } }
        return byID
    }

    public func fetch(withRecordZoneID zoneID: CKRecordZone.ID, completionHandler: @escaping (CKRecordZone?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.recordZone(for: zoneID) }, completionHandler)
    }

    /// Deletes a zone and its records.
    @discardableResult
    public func deleteRecordZone(withID zoneID: CKRecordZone.ID) async throws -> CKRecordZone.ID {
        guard let result = try await modifyRecordZones(saving: [], deleting: [zoneID]).deleteResults[zoneID] else {
            throw CKError(.internalError)
        }
        try result.get()
        return zoneID
    }

    public func delete(withRecordZoneID zoneID: CKRecordZone.ID, completionHandler: @escaping (CKRecordZone.ID?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.deleteRecordZone(withID: zoneID) }, completionHandler)
    }
}

extension NimbusCK {
    /// Runs `work` in the background and hands its outcome to a `Result` completion handler.
    static func completeResult<T>(_ work: @escaping @Sendable () async throws -> T, _ handler: @escaping (Result<T, any Error>) -> Void) {
        complete(work) { value, error in
            if let value { handler(.success(value)) } else { handler(.failure(error ?? CKError(.internalError))) }
        }
    }
}
