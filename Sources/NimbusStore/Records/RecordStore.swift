import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// Records: writes (through the write strategies), lookups, queries and the change feed.
package struct RecordStore: DatabaseBacked {
    package let database: Database
}

/// One way to carry out `records/modify`. `RecordStore.modifyRecords` tries
/// `RecordStore.writeStrategies` in order: a strategy answers (it wrote, or it refused the request
/// with an error) or passes (nil) without having written anything, and the next one is tried.
protocol RecordWriteStrategy: Sendable {
    /// True when the strategy checks an unverified session's token inside its own statement.
    /// Before any other strategy runs, the token is looked up (once).
    var checksTokenItself: Bool { get }
    func write(_ request: RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]?
}

/// A `records/modify` request as the write strategies take it.
struct RecordWriteRequest: Sendable {
    var session: Session
    var zoneName: String
    var operations: [Result<RecordOperation, ItemError>]
    var atomic: Bool
    var limits: Limits
    /// `.cached` when `session` came from `AccountStore.cachedSession`, unchecked.
    var proof: SessionProof = .verified
}

extension RecordStore {
    /// `records/modify`: the first of `writeStrategies` that takes the request writes it.
    ///
    /// `proof`: a session from the cache is checked by the write itself, or its token is looked
    /// up again before anything else.
    package func modifyRecords(_ session: Session, zoneName: String, operations: [Result<RecordOperation, ItemError>],
                               atomic: Bool, limits: Limits, proof: SessionProof = .verified) async throws -> [ModifyResult] {
        var request = RecordWriteRequest(session: session, zoneName: zoneName, operations: operations, atomic: atomic,
                                         limits: limits, proof: proof)
        for strategy in Self.writeStrategies {
            if !strategy.checksTokenItself, request.proof != .verified {
                request.session = try await accounts.verify(request.session, proof: request.proof)
                request.proof = .verified
            }
            if let results = try await strategy.write(request, in: self) { return try await advised(results, session: session) }
        }
        throw SyncError(.internalError, "No write strategy took this request.")
    }

    /// Items refused because production lacks a type or field get reasons that say whether it
    /// awaits a deploy or exists nowhere (with the closest deployed names).
    private func advised(_ results: [ModifyResult], session: Session) async throws -> [ModifyResult] {
        guard results.contains(where: { if case .failed(let error) = $0 { error.missingInProduction != nil } else { false } }) else {
            return results
        }
        let schemas = SchemaStore(database: database)
        let production = try await schemas.schema(container: session.container, environment: .production)
        let development = try await schemas.schema(container: session.container, environment: .development)
        return results.map { result in
            guard case .failed(var error) = result, let missing = error.missingInProduction else { return result }
            error.reason = missing.field.map {
                SchemaAdvice.missingField($0, of: missing.recordType, container: session.container, production: production, development: development)
            } ?? SchemaAdvice.missingRecordType(missing.recordType, container: session.container, production: production, development: development)
            return .failed(error)
        }
    }

    /// `records/lookup`: records by name, in request order; missing (or deleted) ones are nil.
    package func lookupRecords(_ session: Session, zoneName: String, names: [String]) async throws -> [Record?] {
        try await lookupRecords(session, zoneName: zoneName, names: names, renderingWireJSON: false).map { found in
            if case .record(let record)? = found { record } else { nil }
        }
    }

    /// `records/lookup` for an answer: with `renderingWireJSON`, records stored with their wire
    /// form come as that JSON written from the row (as change feeds send them), the others decoded.
    /// One statement (the zone and its records), on the request's event loop when it has one.
    package func lookupRecords(_ session: Session, zoneName: String, names: [String],
                               renderingWireJSON: Bool) async throws -> [RecordChanges.Change?] {
        let read = try await pool.read("""
            WITH z AS (SELECT id FROM zones WHERE database_id = \(session.databaseID) AND zone_name = \(zoneName) AND NOT deleted)
            SELECT z.id, \(unsafeColumns: RecordRows.readColumns(renderingWireJSON: renderingWireJSON))
            FROM z LEFT JOIN LATERAL (
                SELECT * FROM records r WHERE r.zone_id = z.id AND r.record_name = ANY(\(PGData.textArray(names))) AND NOT r.deleted
            ) r ON true
            """) { rows -> (names: [String], changes: [RecordChanges.Change])? in
            guard rows.count > 0 else { return nil }
            var written = WirePage(rows: rows.count, renderingWireJSON: renderingWireJSON)
            var names: [String] = []
            for index in 0..<rows.count where !rows[index].isNull(1) {
                names.append(try rows[index].string(1))
                _ = try written.add(rows[index], zoneName: zoneName, offset: 1)
            }
            return (names, written.changes())
        }
        guard let read else { throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.") }
        let found = Dictionary(zip(read.names, read.changes), uniquingKeysWith: { first, _ in first })
        return names.map { found[$0] }
    }
}

extension RecordStore {
    /// (checksum, size) of every asset-shaped object in the operations' raw fields.
    static func assetCandidates(_ operations: [Result<RecordOperation, ItemError>]) -> [(sha256: [UInt8], size: Int64)] {
        var found: [(sha256: [UInt8], size: Int64)] = []
        func visit(_ value: JSONValue) {
            switch value {
            case .object(let object):
                if case .string(let checksum)? = object["fileChecksum"], case .integer(let size)? = object["size"],
                   let sha = Data(base64Encoded: checksum), sha.count == 32 {
                    found.append((Array(sha), size))
                }
            case .array(let values): values.forEach(visit)
            default: break
            }
        }
        for case .success(let operation) in operations {
            operation.fields.forEach { visit($0.value) }
        }
        return found
    }

    /// Names referenced with DELETE_SELF anywhere in the operations' raw fields.
    static func deleteSelfTargets(_ operations: [Result<RecordOperation, ItemError>]) -> Set<String> {
        var names = Set<String>()
        func visit(_ value: JSONValue) {
            switch value {
            case .object(let object):
                if case .string(let name)? = object["recordName"], case .string("DELETE_SELF")? = object["action"] { names.insert(name) }
            case .array(let values): values.forEach(visit)
            default: break
            }
        }
        for case .success(let operation) in operations {
            operation.fields.forEach { visit($0.value) }
        }
        return names
    }

}
