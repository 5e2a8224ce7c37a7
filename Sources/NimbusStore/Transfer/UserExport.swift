import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// `nimbus export`: one user's private databases written to a directory (`ExportManifest`),
/// read in pages so that memory stays flat however many records there are.
package struct UserExport: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded {
        // The stores it calls run as it does.
        didSet { schemas = schemas.on(execution); subscriptions = subscriptions.on(execution); assets = assets.on(execution) }
    }
    var schemas: SchemaStore
    var subscriptions: SubscriptionStore
    var assets: AssetStore

    /// Records read per statement.
    static let pageSize = 1_000

    /// Writes everything of `user` (only `container`'s databases when given) into `directory`,
    /// which must be empty or missing. `progress` gets a line per zone.
    package func write(user: String, container: String?, to directory: URL,
                       progress: (String) -> Void) async throws -> ExportManifest {
        try Self.prepare(directory)
        guard let owner = try await pool.queryFirst("SELECT id, record_name FROM users WHERE name = \(user)", decode: { row in
            (id: try row.int64(0), recordName: try row.string(1))
        }) else {
            throw TransferError("there is no user \(Names.quoted(user)) on this server; `nimbus user list` shows the users")
        }
        let databases = try await pool.query("""
            SELECT id, container, environment FROM databases
            WHERE owner_user_id = \(owner.id) AND scope = 'private' AND (\(container)::text IS NULL OR container = \(container))
            ORDER BY container, environment
            """) { row in (id: try row.int64(0), container: try row.string(1), environment: try row.string(2)) }
        if let container, databases.isEmpty {
            throw TransferError("user \(Names.quoted(user)) has no data in container \(Names.quoted(container))")
        }
        var manifest = ExportManifest(user: user, exportedAt: Date(), databases: [], assets: 0, assetBytes: 0)
        var assets: [String: (sha256: [UInt8], size: Int64, databaseID: Int64)] = [:]
        for entry in databases {
            guard let environment = Environment(rawValue: entry.environment) else { continue }
            let session = Session(userID: owner.id, userRecordName: owner.recordName, tokenID: "", deviceID: "nimbus-export",
                                  databaseID: entry.id, container: entry.container, environment: environment)
            var summary = ExportManifest.DatabaseEntry(container: entry.container, environment: environment, zones: [], records: 0, subscriptions: 0)
            let base = directory.appendingPathComponent(summary.path, isDirectory: true)
            try FileManager.default.createDirectory(at: base.appendingPathComponent("zones"), withIntermediateDirectories: true)
            let schema = try await schemas.schema(container: entry.container, environment: environment)
            try Data(schema.fileJSON.serialized(sortedKeys: true)).write(to: base.appendingPathComponent("schema.json"))
            let subscriptions = try await self.subscriptions.listSubscriptions(session)
            try Data(JSONValue.array(subscriptions.map(\.json)).serialized(sortedKeys: true)).write(to: base.appendingPathComponent("subscriptions.json"))
            summary.subscriptions = subscriptions.count
            let zones = try await pool.query("""
                SELECT id, zone_name FROM zones WHERE database_id = \(entry.id) AND NOT deleted ORDER BY zone_name
                """) { row in (id: try row.int64(0), name: try row.string(1)) }
            for zone in zones {
                let file = base.appendingPathComponent("zones/\(zone.name).jsonl")
                let count = try await writeRecords(zoneID: zone.id, zoneName: zone.name, to: file) { asset in
                    guard let sha = Data(base64Encoded: asset.fileChecksum) else { return }
                    assets[asset.fileChecksum] = (Array(sha), asset.size, entry.id)
                }
                summary.zones.append(zone.name)
                summary.records += count
                progress("\(entry.container) \(environment.rawValue) zone \(zone.name): \(count) records")
            }
            manifest.databases.append(summary)
        }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("assets"), withIntermediateDirectories: true)
        for (checksum, asset) in assets.sorted(by: { $0.key < $1.key }) {
            guard let path = ExportManifest.assetPath(fileChecksum: checksum) else { continue }
            try await writeAsset(asset.sha256, size: asset.size, databaseID: asset.databaseID, to: directory.appendingPathComponent(path))
            manifest.assets += 1
            manifest.assetBytes += asset.size
        }
        progress("assets: \(manifest.assets) (\(manifest.assetBytes) bytes)")
        try Data(manifest.json.serialized(sortedKeys: true)).write(to: directory.appendingPathComponent(ExportManifest.fileName))
        return manifest
    }

    /// The zone's live records, a JSON line each, by name; returns how many.
    private func writeRecords(zoneID: Int64, zoneName: String, to file: URL, asset: (AssetValue) -> Void) async throws -> Int {
        guard FileManager.default.createFile(atPath: file.path, contents: nil), let handle = FileHandle(forWritingAtPath: file.path) else {
            throw TransferError("cannot create \(file.path)")
        }
        defer { try? handle.close() }
        var after = ""
        var count = 0
        while true {
            let records = try await pool.query("""
                SELECT \(unsafeColumns: RecordRows.recordColumns) FROM records r
                WHERE r.zone_id = \(zoneID) AND NOT r.deleted AND r.record_name COLLATE "C" > \(after)
                ORDER BY r.record_name COLLATE "C" LIMIT \(Int64(Self.pageSize))
                """) { try RecordRows.decodeRecord($0, zoneName: zoneName) }
            guard let last = records.last else { return count }
            var lines: [UInt8] = []
            for record in records {
                for value in record.fields.values { value.assets.forEach(asset) }
                record.writeJSON(to: &lines)
                lines.append(UInt8(ascii: "\n"))
            }
            try handle.write(contentsOf: lines)
            count += records.count
            after = last.recordName
        }
    }

    private func writeAsset(_ sha256: [UInt8], size: Int64, databaseID: Int64, to file: URL) async throws {
        if let existing = try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber, existing.int64Value == size {
            return  // the same bytes, referenced from another database
        }
        guard let assetID = try await pool.queryFirst("""
            SELECT id FROM assets WHERE database_id = \(databaseID) AND sha256 = \(sha256) AND size = \(size) AND complete
            """, decode: { try $0.int64(0) }) else {
            throw TransferError("asset \(Data(sha256).base64EncodedString()) (\(size) bytes) is referenced but no longer stored; run the export again")
        }
        let partial = file.appendingPathExtension("partial")
        guard FileManager.default.createFile(atPath: partial.path, contents: nil), let handle = FileHandle(forWritingAtPath: partial.path) else {
            throw TransferError("cannot create \(partial.path)")
        }
        defer { try? handle.close() }
        let chunks = Int((size + Int64(AssetStore.assetChunkBytes) - 1) / Int64(AssetStore.assetChunkBytes))
        var first = 0
        while first < chunks {
            let end = min(first + 16, chunks)
            for chunk in try await assets.assetChunks(assetID: assetID, from: first, to: end) {
                try handle.write(contentsOf: chunk)
            }
            first = end
        }
        try handle.close()
        try FileManager.default.moveItem(at: partial, to: file)
    }

    /// The export directory: created when missing; an existing one must be empty.
    private static func prepare(_ directory: URL) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw TransferError("\(directory.path) is a file; name a new or empty directory for the export") }
            let contents = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            guard contents.isEmpty else { throw TransferError("\(directory.path) is not empty; name a new or empty directory for the export") }
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
}
