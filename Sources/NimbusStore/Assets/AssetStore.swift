import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

package struct UploadedAsset: Sendable, Hashable {
    package var fileChecksum: String
    package var size: Int64
    package var receipt: String
}

/// An asset to download: where its bytes are and what identifies them.
package struct StoredAsset: Sendable, Hashable {
    package var id: Int64
    package var size: Int64
    package var fileChecksum: String
}

package enum AssetAccess: Sendable {
    case unauthenticated
    case notFound
    case granted(Session, databaseID: Int64)
}

/// Asset blobs: uploads, receipts, downloads and the collection of unreferenced ones.
package struct AssetStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded
}

extension AssetStore {
    /// Bytes per `asset_chunks` row: uploads and downloads stream a chunk at a time.
    package static let assetChunkBytes = 256 << 10

    // MARK: - Signed handles

    /// A receipt binds database, checksum and size (docs/api.md Assets).
    package func receipt(databaseID: Int64, sha256: [UInt8], size: Int64) -> String {
        var payload: [UInt8] = []
        payload.appendBigEndian64(databaseID)
        payload.appendBigEndian64(size)
        return signer.sign(payload + sha256, context: "receipt")
    }

    /// Why `asset`'s receipt does not prove an upload of exactly its bytes to this database, in
    /// words that say what to do; nil when it does.
    package func receiptProblem(_ asset: AssetValue, databaseID: Int64) -> String? {
        guard let receipt = asset.receipt else {
            return "the ASSETID value has no receipt; upload the bytes with assets/upload and put the upload's fileChecksum, size and receipt in the field."
        }
        // Another database's receipt reads as an altered one: an answer must not tell a foreign
        // object from a missing one (the isolation matrix, scenario 80).
        guard let payload = signer.verify(receipt, context: "receipt"), payload.count == 48, payload.int64(at: 0) == databaseID else {
            return "the receipt is not one this database issued (it was altered, or belongs to another user, container or environment); "
                + "upload the bytes with this user's token in this container and put the upload's receipt in the field unchanged."
        }
        let issuedChecksum = Data(payload[16...]).base64EncodedString(), issuedSize = payload.int64(at: 8)
        var differences: [String] = []
        if asset.fileChecksum != issuedChecksum { differences.append("fileChecksum \(asset.fileChecksum)") }
        if asset.size != issuedSize { differences.append("size \(asset.size)") }
        guard differences.isEmpty else {
            return "the receipt is for fileChecksum \(issuedChecksum) and size \(issuedSize), not \(differences.joined(separator: " and ")); send the three values as the upload answered them."
        }
        return nil
    }

    /// The path of an asset's download URL (content-addressed within its database).
    package func downloadPath(databaseID: Int64, fileChecksum: String, size: Int64) -> String {
        var payload: [UInt8] = []
        payload.appendBigEndian64(databaseID)
        payload.appendBigEndian64(size)
        payload += Array(Data(base64Encoded: fileChecksum) ?? Data())
        return "/assets/1/download/" + signer.sign(payload, context: "download")
    }

    func download(handle: String) -> (databaseID: Int64, size: Int64, sha256: [UInt8])? {
        guard let payload = signer.verify(handle, context: "download"), payload.count == 48 else { return nil }
        return (payload.int64(at: 0), payload.int64(at: 8), Array(payload[16...]))
    }

    // MARK: - Upload URLs

    /// `assets/upload`: one single-use upload id per requested field.
    package func createUploads(_ session: Session, zoneName: String, requests: [(recordType: String, fieldName: String, recordName: String)]) async throws -> [String] {
        var random = SystemRandomNumberGenerator()
        let ids = requests.map { _ in Base64URL.encode((0..<18).map { _ in UInt8.random(in: .min ... .max, using: &random) }) }
        try await pool.withConnection { connection in
            guard let zone = try ZoneStore.zone(connection, databaseID: session.databaseID, name: zoneName), !zone.deleted else {
                throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.")
            }
            try connection.run("""
                INSERT INTO asset_uploads (id, database_id, record_type, field_name, record_name)
                SELECT u.id, \(session.databaseID), u.t, u.f, u.r
                FROM unnest(\(PGData.textArray(ids)), \(PGData.textArray(requests.map(\.recordType))),
                            \(PGData.textArray(requests.map(\.fieldName))), \(PGData.textArray(requests.map(\.recordName)))) AS u(id, t, f, r)
                """)
        }
        return ids
    }

    /// Resolves the bearer token and the upload id: only the user whose database asked for the
    /// URL may use it, and only until a successful upload used it up.
    package func uploadAccess(tokenDigest: [UInt8], uploadID: String) async throws -> AssetAccess {
        try await pool.withConnection { connection in
            let found = try connection.queryFirst("""
                SELECT \(unsafeColumns: AccountStore.sessionColumns)
                FROM device_tokens t JOIN users u ON u.id = t.user_id
                LEFT JOIN asset_uploads a ON a.id = \(uploadID) AND a.used_at IS NULL
                LEFT JOIN databases d ON d.id = a.database_id AND d.owner_user_id = t.user_id
                WHERE t.token_sha256 = \(tokenDigest) AND t.revoked_at IS NULL
                """) { row -> AssetAccess in
                try AccountStore.decodeSession(row).map { .granted($0, databaseID: $0.databaseID) } ?? .notFound
            }
            return found ?? .unauthenticated
        }
    }

    /// Streams an upload into `asset_chunks` while hashing it. No connection is held while
    /// waiting for the client: each 256 KiB chunk is written by its own short statement into an
    /// incomplete asset row, and only the end is a (short) transaction, which checks the quota
    /// under a per-user lock (concurrent uploads cannot overrun it), marks the upload URL used,
    /// and keeps identical bytes once. A cut-off upload deletes its row (chunks go with it); rows
    /// left by a crash are swept by the pruner.
    package func upload(_ session: Session, uploadID: String, next: @escaping @Sendable () async throws -> [UInt8]?,
                        maxBytes: Int, quotaBytes: Int) async throws -> UploadedAsset {
        let databaseID = session.databaseID, userID = session.userID
        let (assetID, used) = try await pool.withConnection { connection -> (Int64, Int64) in
            let used = try Self.storedBytes(connection, userID: userID)
            let id = try connection.queryFirst("INSERT INTO assets (database_id) VALUES (\(databaseID)) RETURNING id") { try $0.int64(0) } ?? 0
            return (id, used)
        }
        // One chunk is written while the next is read from the client.
        var inFlight: Task<Void, any Error>?
        do {
            var hasher = SHA256()
            var size: Int64 = 0
            var pending: [UInt8] = []
            pending.reserveCapacity(Self.assetChunkBytes)
            var index: Int32 = 0
            // Past the quota the bytes are still hashed (they may be a copy already stored,
            // which costs nothing) but no longer written.
            var overQuota = false
            func store(_ bytes: [UInt8]) async throws {
                guard !overQuota else { return }
                let n = index
                index += 1
                try await inFlight?.value
                inFlight = Task { [pool] in try await Self.storeChunk(bytes, n: n, assetID: assetID, pool: pool) }
            }
            while let piece = try await next() {
                hasher.update(piece)
                size += Int64(piece.count)
                guard size <= Int64(maxBytes) else {
                    throw SyncError(.limitExceeded, "The asset is larger than maxAssetBytes (\(maxBytes) bytes).")
                }
                if used + size > Int64(quotaBytes) { overQuota = true }
                var offset = 0
                while offset < piece.count {
                    let take = min(Self.assetChunkBytes - pending.count, piece.count - offset)
                    pending.append(contentsOf: piece[offset..<(offset + take)])
                    offset += take
                    if pending.count == Self.assetChunkBytes {
                        try await store(pending)
                        pending.removeAll(keepingCapacity: true)
                    }
                }
            }
            if !pending.isEmpty { try await store(pending) }
            try await inFlight?.value
            let digest = hasher.finalize()
            let finalSize = size, keepsOwnCopy = !overQuota
            try await pool.withTransaction { connection in
                // One finisher per user at a time: the quota sees every completed upload.
                try connection.run("SELECT pg_advisory_xact_lock(\(Int64(0x4E494D42) << 32 | userID))")
                let duplicate = try connection.queryFirst("""
                    SELECT id FROM assets WHERE database_id = \(databaseID) AND sha256 = \(digest) AND size = \(finalSize) AND complete
                    FOR KEY SHARE
                    """) { try $0.int64(0) }
                if let duplicate {
                    // Stored once; uploading it again restarts its grace period.
                    try connection.run("UPDATE assets SET last_referenced_at = now() WHERE id = \(duplicate)")
                    try connection.run("DELETE FROM assets WHERE id = \(assetID)")
                } else {
                    guard keepsOwnCopy, try Self.storedBytes(connection, userID: userID) + finalSize <= Int64(quotaBytes) else {
                        throw SyncError(.quotaExceeded, "This upload would exceed the storage quota of \(quotaBytes) bytes (userQuotaBytes).")
                    }
                    try connection.run("UPDATE assets SET sha256 = \(digest), size = \(finalSize), complete = true WHERE id = \(assetID)")
                }
                let claimed = try connection.run("UPDATE asset_uploads SET used_at = now() WHERE id = \(uploadID) AND used_at IS NULL")
                guard claimed == 1 else { throw SyncError(.notFound, "This upload URL was used by another upload meanwhile.") }
            }
            return UploadedAsset(fileChecksum: Data(digest).base64EncodedString(), size: finalSize,
                                 receipt: receipt(databaseID: databaseID, sha256: digest, size: finalSize))
        } catch {
            // (The chunk in flight, if any, is written or failed before the row goes.)
            _ = try? await inFlight?.value
            _ = try? await pool.withConnection { try $0.run("DELETE FROM assets WHERE id = \(assetID) AND NOT complete") }
            if let pgError = error as? PGError, pgError.sqlState == PGError.SQLState.uniqueViolation {
                throw SyncError(.tryAgainLater, "The same bytes were uploaded at the same moment; retry.", retryAfter: 1)
            }
            throw error
        }
    }

    /// One chunk of an upload, committed without waiting for the WAL flush: the upload's last
    /// transaction is synchronous, and its flush makes every earlier WAL record durable, these
    /// chunks included, before the asset is complete. A crash before it leaves an incomplete
    /// asset, which is swept. (A flush per 256 KiB chunk had made uploads wait for ~200 fsyncs
    /// per 50 MiB.)
    private static func storeChunk(_ bytes: [UInt8], n: Int32, assetID: Int64, pool: StorePool) async throws {
        _ = try await pool.withConnection { connection in
            try connection.run("""
                INSERT INTO asset_chunks (asset_id, n, bytes)
                SELECT \(assetID), \(n), \(bytes) FROM (SELECT set_config('synchronous_commit', 'off', true)) AS unflushed
                """)
        }
    }

    /// Stores a file's bytes as a complete asset of a database (an import: the caller checked
    /// that `sha256` is the file's digest); identical bytes already there are kept once. The
    /// quota is not applied: the operator moves data the user already had. Returns the size.
    package func storeFile(_ file: URL, databaseID: Int64, sha256: [UInt8]) async throws -> Int64 {
        guard let handle = FileHandle(forReadingAtPath: file.path) else {
            throw SyncError(.notFound, "cannot read \(file.path)")
        }
        defer { try? handle.close() }
        let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
        let size = (attributes?[.size] as? NSNumber)?.int64Value ?? 0
        return try await pool.withTransaction { connection in
            if let existing = try connection.queryFirst("""
                SELECT id FROM assets WHERE database_id = \(databaseID) AND sha256 = \(sha256) AND size = \(size) AND complete
                """, decode: { try $0.int64(0) }) {
                try connection.run("UPDATE assets SET last_referenced_at = now() WHERE id = \(existing)")
                return size
            }
            let id = try connection.queryFirst("INSERT INTO assets (database_id) VALUES (\(databaseID)) RETURNING id") { try $0.int64(0) } ?? 0
            var index: Int32 = 0
            while let chunk = try handle.read(upToCount: Self.assetChunkBytes), !chunk.isEmpty {
                try connection.run("INSERT INTO asset_chunks (asset_id, n, bytes) VALUES (\(id), \(index), \(Array(chunk)))")
                index += 1
            }
            try connection.run("UPDATE assets SET sha256 = \(sha256), size = \(size), complete = true WHERE id = \(id)")
            return size
        }
    }

    /// Bytes of complete assets in all of a user's databases.
    static func storedBytes(_ connection: PGConnection, userID: Int64) throws -> Int64 {
        try connection.queryFirst("""
            SELECT COALESCE(sum(a.size), 0)::int8 FROM assets a JOIN databases d ON d.id = a.database_id
            WHERE d.owner_user_id = \(userID) AND a.complete
            """) { try $0.int64(0) } ?? 0
    }

    // MARK: - Download

    /// Resolves the bearer token and download handle: another user's asset is not found.
    package func downloadAccess(tokenDigest: [UInt8], handle: String) async throws -> (AssetAccess, StoredAsset?) {
        let target = download(handle: handle)
        return try await pool.withConnection { connection in
            let row = try connection.queryFirst("""
                SELECT \(unsafeColumns: AccountStore.sessionColumns), a.id, a.size
                FROM device_tokens t JOIN users u ON u.id = t.user_id
                LEFT JOIN databases d ON d.id = \(target?.databaseID ?? -1) AND d.owner_user_id = t.user_id
                LEFT JOIN assets a ON a.database_id = d.id AND a.sha256 = \(target?.sha256 ?? []) AND a.size = \(target?.size ?? -1) AND a.complete
                WHERE t.token_sha256 = \(tokenDigest) AND t.revoked_at IS NULL
                """) { row -> (AssetAccess, StoredAsset?) in
                guard let target, !row.isNull(7), let session = try AccountStore.decodeSession(row) else { return (.notFound, nil) }
                return (.granted(session, databaseID: session.databaseID),
                        StoredAsset(id: try row.int64(7), size: try row.int64(8), fileChecksum: Data(target.sha256).base64EncodedString()))
            }
            return row ?? (.unauthenticated, nil)
        }
    }

    /// Chunks `first..<end` of an asset, in order.
    package func assetChunks(assetID: Int64, from first: Int, to end: Int) async throws -> [[UInt8]] {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT bytes FROM asset_chunks WHERE asset_id = \(assetID) AND n >= \(Int32(first)) AND n < \(Int32(end)) ORDER BY n
                """) { try $0.bytes(0) }
        }
    }

    // MARK: - References and collection

    /// Complete assets of a database among the given contents (checksum, size) — what receipts
    /// in a save may refer to.
    static func existingAssets(_ connection: PGConnection, databaseID: Int64, candidates: [(sha256: [UInt8], size: Int64)]) throws -> Set<String> {
        guard !candidates.isEmpty else { return [] }
        let found = try connection.query("""
            SELECT encode(a.sha256, 'base64'), a.size FROM assets a
            JOIN unnest(\(PGData.textArray(candidates.map { Data($0.sha256).base64EncodedString() })), \(PGData.int64Array(candidates.map(\.size)))) AS c(s, z)
              ON a.sha256 = decode(c.s, 'base64') AND a.size = c.z
            WHERE a.database_id = \(databaseID) AND a.complete
            FOR KEY SHARE OF a
            """) { "\(try $0.string(0))/\(try $0.int64(1))" }
        return Set(found)
    }

    /// Deletes complete assets that no record references and that were neither created nor
    /// referenced within `graceSeconds`. Returns (assets, bytes) removed.
    package func collectUnreferencedAssets(graceSeconds: Int64, dryRun: Bool = false, container: String? = nil) async throws -> (count: Int, bytes: Int64) {
        try await pool.withConnection { connection in
            // Optionally only the databases of one container (`nimbus prune --container`).
            let scope: SQL = container.map { "a.database_id IN (SELECT id FROM databases WHERE container = \($0))" } ?? "true"
            let sql: SQL = dryRun ? """
                SELECT count(*), COALESCE(sum(a.size), 0)::int8 FROM assets a
                WHERE a.complete AND GREATEST(a.created_at, COALESCE(a.last_referenced_at, a.created_at)) < now() - \(graceSeconds) * interval '1 second'
                  AND NOT EXISTS (SELECT 1 FROM asset_references r WHERE r.database_id = a.database_id AND r.sha256 = a.sha256 AND r.size = a.size)
                  AND \(scope)
                """ : """
                WITH doomed AS (
                    DELETE FROM assets a
                    WHERE a.complete AND GREATEST(a.created_at, COALESCE(a.last_referenced_at, a.created_at)) < now() - \(graceSeconds) * interval '1 second'
                      AND NOT EXISTS (SELECT 1 FROM asset_references r WHERE r.database_id = a.database_id AND r.sha256 = a.sha256 AND r.size = a.size)
                      AND \(scope)
                    RETURNING a.size
                )
                SELECT count(*), COALESCE(sum(size), 0)::int8 FROM doomed
                """
            let result = try connection.queryFirst(sql) { (try $0.int(0), try $0.int64(1)) } ?? (0, 0)
            if !dryRun && container == nil {
                // Unused upload URLs older than a day, and uploads a crash left incomplete.
                try connection.run("DELETE FROM asset_uploads WHERE created_at < now() - interval '1 day'")
                try connection.run("DELETE FROM assets WHERE NOT complete AND created_at < now() - interval '1 hour'")
            }
            return result
        }
    }
}

extension [UInt8] {
    mutating func appendBigEndian64(_ value: Int64) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }

    func int64(at offset: Int) -> Int64 {
        self[offset..<(offset + 8)].reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }
}
