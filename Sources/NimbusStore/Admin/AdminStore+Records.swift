import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// A user's zone as the console's record browser lists it.
package struct BrowsableZone: Sendable, Hashable {
    package var container: String
    package var environment: String
    package var zoneName: String
    package var liveRecords: Int
    package var tombstones: Int
}

/// A record as the console shows it: its fields as stored (typed, `{"name": {"value", "type"}}`).
package struct BrowsedRecord: Sendable, Hashable {
    package var recordName: String
    package var recordType: String
    /// The fields' JSON text.
    package var fields: String
    package var modifiedAt: Date
    package var modifiedByDevice: String
    package var deleted: Bool
}

/// Which records a page of the browser shows.
package struct RecordBrowse: Sendable, Hashable {
    package var user: String
    package var container: String
    package var environment: Environment
    package var zoneName: String
    package var recordType: String?
    package var includeTombstones = false
    /// Records after this name (the previous page's last).
    package var after = ""
    package var limit = 50

    package init(user: String, container: String, environment: Environment, zoneName: String) {
        self.user = user
        self.container = container
        self.environment = environment
        self.zoneName = zoneName
    }
}

extension AdminStore {
    /// The device name the console's own writes carry (`modifiedBy` of a record it deleted).
    package static let consoleDevice = "admin-console"

    /// `user`'s live zones in every container and environment, with their record counts.
    package func zones(user: String) async throws -> [BrowsableZone] {
        _ = try await devices.user(named: user)
        return try await pool.query("""
            SELECT d.container, d.environment, z.zone_name,
                   (SELECT count(*) FILTER (WHERE NOT r.deleted) FROM records r WHERE r.zone_id = z.id),
                   (SELECT count(*) FILTER (WHERE r.deleted) FROM records r WHERE r.zone_id = z.id)
            FROM users u JOIN databases d ON d.owner_user_id = u.id JOIN zones z ON z.database_id = d.id AND NOT z.deleted
            WHERE u.name = \(user)
            ORDER BY d.container, d.environment, z.zone_name
            """) { row in
            BrowsableZone(container: try row.string(0), environment: try row.string(1), zoneName: try row.string(2),
                          liveRecords: Int(try row.int64(3)), tombstones: Int(try row.int64(4)))
        }
    }

    /// One page of a zone's records by name; `moreComing` when another page follows.
    package func browse(_ browse: RecordBrowse) async throws -> (records: [BrowsedRecord], moreComing: Bool) {
        let zoneID = try await locate(browse).zoneID
        let type: PGData = browse.recordType.map { .text($0) } ?? .null
        let rows = try await pool.query("""
            SELECT record_name, record_type, fields::text, modified_at, modified_by_device, deleted FROM records
            WHERE zone_id = \(zoneID) AND record_name > \(browse.after)
              AND (\(type)::text IS NULL OR record_type = \(type)::text) AND (\(browse.includeTombstones) OR NOT deleted)
            ORDER BY record_name LIMIT \(Int64(browse.limit + 1))
            """) { row in
            BrowsedRecord(recordName: try row.string(0), recordType: try row.string(1), fields: try row.string(2),
                          modifiedAt: try row.date(3), modifiedByDevice: try row.string(4), deleted: try row.bool(5))
        }
        return (Array(rows.prefix(browse.limit)), rows.count > browse.limit)
    }

    /// Deletes one record through the normal delete path (a tombstone the devices fetch,
    /// delete notifications, `DELETE_SELF` references: `LockedWrite`), as the device
    /// `admin-console`, with its audit entry in the delete's transaction.
    package func deleteRecord(_ address: RecordBrowse, recordName: String, by admin: AdminIdentity, limits: Limits) async throws {
        let session = try await session(address)
        let entry = AdminAudit(admin, action: "record.delete", target: recordName,
                               detail: ["user": .string(address.user), "container": .string(address.container),
                                        "environment": .string(address.environment.rawValue), "zoneName": .string(address.zoneName)])
        let request = RecordWriteRequest(session: session, zoneName: address.zoneName,
                                         operations: [.success(RecordOperation(kind: .forceDelete, recordName: recordName))],
                                         atomic: true, limits: limits)
        let results = try await LockedWrite(alongside: entry.write).write(request, in: records) ?? []
        if case .failed(let error)? = results.first { throw SyncError(error.code, error.reason) }
    }

    /// The user, database and zone of an address in one statement; an unknown user is NOT_FOUND,
    /// a zone it lacks ZONE_NOT_FOUND.
    private func locate(_ address: RecordBrowse) async throws -> (userID: Int64, userRecordName: String, databaseID: Int64, zoneID: Int64) {
        let found = try await pool.queryFirst("""
            SELECT u.id, u.record_name, d.id, z.id FROM users u JOIN databases d ON d.owner_user_id = u.id AND d.scope = 'private'
            JOIN zones z ON z.database_id = d.id AND NOT z.deleted
            WHERE u.name = \(address.user) AND d.container = \(address.container) AND d.environment = \(address.environment.rawValue)
              AND z.zone_name = \(address.zoneName)
            """, decode: { (userID: try $0.int64(0), userRecordName: try $0.string(1), databaseID: try $0.int64(2), zoneID: try $0.int64(3)) })
        guard let found else {
            _ = try await devices.user(named: address.user)
            throw SyncError(.zoneNotFound, "\(address.user) has no zone \(address.zoneName) in \(address.container) (\(address.environment.rawValue)).")
        }
        return found
    }

    /// A session of the console's own acting for `user` in the address's database.
    private func session(_ address: RecordBrowse) async throws -> Session {
        let found = try await locate(address)
        return Session(userID: found.userID, userRecordName: found.userRecordName, tokenID: "", deviceID: Self.consoleDevice,
                       databaseID: found.databaseID, container: address.container, environment: address.environment)
    }
}

extension AdminStore {
    /// Bytes per stored chunk of an asset (migration 0004's `asset_chunks`).
    static let assetChunkBytes: Int64 = 256 * 1024

    /// The bytes of an asset of `user` in the address's database, by content (`fileChecksum`, the
    /// base64 SHA-256, and size); NOT_FOUND unless such an upload completed there.
    package func assetBytes(_ address: RecordBrowse, fileChecksum: String, size: Int64) async throws -> [UInt8] {
        guard let digest = Data(base64Encoded: fileChecksum), digest.count == 32, size >= 0 else {
            throw SyncError(.badRequest, "fileChecksum must be a base64 SHA-256 and size a byte count.")
        }
        guard let id = try await pool.queryFirst("""
            SELECT a.id FROM users u JOIN databases d ON d.owner_user_id = u.id AND d.scope = 'private'
            JOIN assets a ON a.database_id = d.id AND a.complete
            WHERE u.name = \(address.user) AND d.container = \(address.container) AND d.environment = \(address.environment.rawValue)
              AND a.sha256 = \([UInt8](digest)) AND a.size = \(size)
            """, decode: { try $0.int64(0) }) else {
            throw SyncError(.notFound, "\(address.user) has no asset \(fileChecksum) of \(size) bytes in \(address.container).")
        }
        let chunks = Int((size + Self.assetChunkBytes - 1) / Self.assetChunkBytes)
        return try await assets.assetChunks(assetID: id, from: 0, to: chunks).flatMap { $0 }
    }
}
