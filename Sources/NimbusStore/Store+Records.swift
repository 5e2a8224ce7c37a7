import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

extension Store {
    /// Columns every record read selects, in `decodeRecord` order.
    static let recordColumns: StaticString = """
        r.record_name, r.record_type, r.fields, r.change_seq, \
        r.created_at, r.created_by_user, r.created_by_device, \
        r.modified_at, r.modified_by_user, r.modified_by_device, r.deleted
        """

    /// Times are stored in whole milliseconds (every write sets them from one), so the
    /// timestamps read back exactly.
    static func decodeRecord(_ row: PGRow, zoneName: String, offset: Int = 0) throws -> Record {
        let fields: [String: FieldValue]
        do {
            fields = try Record.fields(fromStored: try JSONValue.parse(try row.jsonb(offset + 2)))
        } catch {
            throw PGError(.decoding, "stored fields of \(try row.string(offset)) are unreadable: \(error)")
        }
        return Record(
            recordName: try row.string(offset), recordType: try row.string(offset + 1), fields: fields,
            changeTag: ChangeTag.make(sequence: try row.int64(offset + 3)),
            created: RecordStamp(timestamp: try row.milliseconds(offset + 4), userRecordName: try row.string(offset + 5), deviceID: try row.string(offset + 6)),
            modified: RecordStamp(timestamp: try row.milliseconds(offset + 7), userRecordName: try row.string(offset + 8), deviceID: try row.string(offset + 9)),
            deleted: try row.bool(offset + 10), zoneName: zoneName)
    }

    /// `recordColumns` for change feeds: the jsonb fields only where no wire form was stored for
    /// the record's current version (printing jsonb was most of PostgreSQL's work for a page of
    /// changes), and that wire form last (migration 0009).
    static let changeColumns: StaticString = """
        r.record_name, r.record_type, CASE WHEN r.wire_fields_seq = r.change_seq AND r.wire_fields IS NOT NULL THEN NULL ELSE r.fields END, r.change_seq, \
        r.created_at, r.created_by_user, r.created_by_device, \
        r.modified_at, r.modified_by_user, r.modified_by_device, r.deleted, \
        CASE WHEN r.wire_fields_seq = r.change_seq THEN r.wire_fields END
        """

    /// A row of `changeColumns` as bytes in place (see `StoredRecordText`), or nil when it is a
    /// live record without a stored wire form: decode that one (`decodeRecord`).
    static func storedRecordText(_ row: PGRow, offset: Int = 0) throws -> StoredRecordText? {
        let deleted = try row.bool(offset + 10)
        guard deleted || !row.isNull(offset + 11) else { return nil }
        return StoredRecordText(
            recordName: try row.unsafeText(offset), recordType: try row.unsafeText(offset + 1),
            fields: deleted ? UnsafeRawBufferPointer(start: nil, count: 0) : try row.unsafeText(offset + 11),
            sequence: try row.int64(offset + 3),
            created: .init(timestamp: try row.milliseconds(offset + 4), userRecordName: try row.unsafeText(offset + 5), deviceID: try row.unsafeText(offset + 6)),
            modified: .init(timestamp: try row.milliseconds(offset + 7), userRecordName: try row.unsafeText(offset + 8), deviceID: try row.unsafeText(offset + 9)),
            deleted: deleted)
    }

    static func records(_ connection: PGConnection, zoneID: Int64, zoneName: String, names: [String]) throws -> [String: Record] {
        guard !names.isEmpty else { return [:] }
        let rows = try connection.query("""
            SELECT \(unsafeColumns: recordColumns) FROM records r
            WHERE r.zone_id = \(zoneID) AND r.record_name = ANY(\(PGData.textArray(names)))
            """) { try decodeRecord($0, zoneName: zoneName) }
        return Dictionary(rows.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// `records/modify` in one transaction: the zone's row lock orders it against every other
    /// writer of the zone, so the sequence numbers it assigns follow commit order.
    ///
    /// `unverifiedTokenDigest`: the session came from `cachedSession` for this token, unchecked;
    /// the write checks the token itself, or it is looked up again before anything else.
    package func modifyRecords(_ session: Session, zoneName: String, operations: [Result<RecordOperation, ItemError>],
                               atomic: Bool, limits: Limits, unverifiedTokenDigest: [UInt8]? = nil) async throws -> [ModifyResult] {
        #if NIMBUS_NEGATIVE_CONTROL
        if true { return try await negativeControlModify(session, zoneName: zoneName, operations: operations, atomic: atomic, limits: limits, unverifiedTokenDigest: unverifiedTokenDigest) }
        #endif
        if let results = try await createWithoutReading(session, checkingToken: unverifiedTokenDigest, zoneName: zoneName,
                                                        operations: operations, atomic: atomic, limits: limits) {
            return results
        }
        var session = session
        if let digest = unverifiedTokenDigest {
            guard let verified = try await self.session(tokenDigest: digest, container: session.container, environment: session.environment) else {
                throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
            }
            session = verified
        }
        if case .done(let results, let event) = try await modifyOptimistically(session, zoneName: zoneName, operations: operations,
                                                                                atomic: atomic, limits: limits) {
            if let event { announce([event]) }
            return results
        }
        return try await modifyRecords(session, zoneName: zoneName, operations: operations, atomic: atomic, limits: limits, onlyWhere: nil)
    }

    /// `onlyWhere`: a condition on `r` (the records row) checked under the zone lock; operations
    /// on records that fail it are dropped (the pruner deletes only what is still expired).
    func modifyRecords(_ session: Session, zoneName: String, operations: [Result<RecordOperation, ItemError>],
                       atomic: Bool, limits: Limits, onlyWhere: SQL?) async throws -> [ModifyResult] {
        let now = clock.nowMilliseconds()
        let (results, events) = try await pool.withTransaction { connection -> ([ModifyResult], [ChangeEvent]) in
            // One round trip: the zone's row lock (ordering this write against every other writer of
            // the zone), whether the database has subscriptions, the container's schema, and the
            // operations' records with the targets of their DELETE_SELF references.
            let names = operations.compactMap { try? $0.get().recordName }
            let wanted = Array(Set(names).union(Self.deleteSelfTargets(operations)))
            let rows = try connection.query("""
                WITH locked AS (
                    SELECT zone_name, id, change_seq, tombstone_horizon_seq, deleted FROM zones
                    WHERE database_id = \(session.databaseID) AND zone_name = \(zoneName) FOR UPDATE
                ), seen AS (
                    SELECT change_seq FROM zones WHERE database_id = \(session.databaseID) AND zone_name = \(zoneName)
                )
                SELECT l.zone_name, l.id, l.change_seq, l.tombstone_horizon_seq, l.deleted,
                       EXISTS (SELECT 1 FROM subscriptions WHERE database_id = \(session.databaseID)),
                       \(Self.schemaAggregate(container: session.container, environment: session.environment)),
                       (SELECT change_seq FROM seen), \(unsafeColumns: Self.recordColumns)
                FROM locked l LEFT JOIN records r ON r.zone_id = l.id AND r.record_name = ANY(\(PGData.textArray(wanted)))
                """) { row -> (zone: ZoneInfo, hasSubscriptions: Bool, schema: String, seen: Int64, record: Record?) in
                let zone = try Self.decodeZone(row)
                let record = row.isNull(8) ? nil : try Self.decodeRecord(row, zoneName: zone.name, offset: 8)
                return (zone, try row.bool(5), try row.string(6), try row.int64(7), record)
            }
            let locked = rows.first
            guard let zone = locked?.zone, !zone.deleted else {
                throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.")
            }
            var schema = Self.decodeSchemaAggregate(locked?.schema ?? "[]")
            // The rows come from the statement's snapshot, taken before the lock was granted. Every
            // write bumps the zone's sequence, so equal sequences in the snapshot and under the lock
            // mean no write committed in between; otherwise read the records again, now.
            var existing: [String: Record]
            if locked?.seen == zone.changeSequence {
                existing = Dictionary(rows.compactMap { $0.record.map { ($0.recordName, $0) } }, uniquingKeysWith: { first, _ in first })
            } else {
                existing = try Self.records(connection, zoneID: zone.id, zoneName: zoneName, names: wanted)
            }
            var context = ModifyPlanner.Context(
                zoneName: zoneName, userRecordName: session.userRecordName, deviceID: session.deviceID, now: now,
                baseSequence: zone.changeSequence, environment: session.environment, maxRecordBytes: limits.maxRecordBytes, atomic: atomic)
            var operations = operations
            if let onlyWhere {
                var statement: SQL = "SELECT r.record_name FROM records r WHERE r.zone_id = \(zone.id) AND r.record_name = ANY(\(PGData.textArray(names))) AND ("
                statement.append(onlyWhere)
                statement.append(")")
                let eligible = Set(try connection.query(statement) { try $0.string(0) })
                operations = operations.filter { (try? $0.get()).map { eligible.contains($0.recordName) } ?? false }
            }
            // Assets named in the request that exist in this database, for checking receipts.
            let mentioned = Self.assetCandidates(operations)
            let stored = try Self.existingAssets(connection, databaseID: session.databaseID, candidates: mentioned)
            let signer = self
            let databaseID = session.databaseID
            context.assetCheck = { asset in
                guard signer.verifyReceipt(asset, databaseID: databaseID) else {
                    return "the receipt does not belong to this database with checksum \(asset.fileChecksum) and size \(asset.size)."
                }
                guard stored.contains("\(asset.fileChecksum)/\(asset.size)") else {
                    return "the asset \(asset.fileChecksum) is no longer stored; upload it again."
                }
                return nil
            }
            let planner = ModifyPlanner(context: context)
            var plan = planner.plan(operations, existing: existing, schema: schema)

            // The development schema learns new fields under the types' row locks; a field typed
            // differently by a concurrent request means this plan is stale: plan again.
            if !plan.schemaAdditions.isEmpty {
                guard session.environment == .development else { throw SyncError(.badRequest, "The production schema cannot change by saving.") }
                let conflicts = try Self.addToSchema(connection, container: session.container, environment: session.environment,
                                                     additions: plan.schemaAdditions)
                if !conflicts.isEmpty {
                    schema = try Self.loadSchema(connection, container: session.container, environment: session.environment)
                    plan = planner.plan(operations, existing: existing, schema: schema)
                    if !plan.schemaAdditions.isEmpty {
                        let again = try Self.addToSchema(connection, container: session.container,
                                                         environment: session.environment, additions: plan.schemaAdditions)
                        guard again.isEmpty else {
                            throw SyncError(.tryAgainLater, "The schema changed during this request; retry it.", retryAfter: 1)
                        }
                    }
                }
            }

            var cascaded: [String: Record] = [:]
            if !plan.deletedNames.isEmpty {
                let handled = plan.writes.map { write -> String in
                    switch write {
                    case .save(let record, _, _, _): record.recordName
                    case .delete(let name, _, _): name
                    }
                }
                let doomed = try Self.cascadeTargets(connection, zoneID: zone.id, zoneName: zoneName, deleted: plan.deletedNames, exclude: handled)
                plan.addCascade(doomed.map { ($0.recordName, $0.recordType) })
                cascaded = Dictionary(doomed.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
            }
            guard plan.hasWrites else { return (plan.results, []) }
            var events = [ChangeEvent(databaseID: session.databaseID, kind: .records, zoneID: zone.id, sequence: plan.lastSequence)]
            try Self.write(plan, connection: connection, zoneID: zone.id, session: session, now: now,
                           previous: PreviousState(plan, existing: existing, cascaded: cascaded))
            // Notifications commit with the change that fires them, or not at all.
            if locked?.hasSubscriptions == true {
                let subscriptions = try Self.loadSubscriptions(connection, databaseID: session.databaseID, schema: schema, limits: limits)
                var fired = Self.notifications(for: plan, subscriptions: subscriptions, existing: existing, cascaded: cascaded, zoneName: zoneName)
                if !fired.spent.isEmpty {
                    // firesOnce: only the transaction that deletes the subscription fires it. The
                    // DELETE waits for a concurrent writer holding the row and then finds it gone.
                    let deleted = Set(try connection.query("""
                        DELETE FROM subscriptions WHERE database_id = \(session.databaseID) AND subscription_id = ANY(\(PGData.textArray(fired.spent)))
                        RETURNING subscription_id
                        """) { try $0.string(0) })
                    fired.rows.removeAll { $0.subscription.firesOnce && !deleted.contains($0.subscription.id) }
                    fired.spent = []
                }
                if !fired.rows.isEmpty {
                    let newest = try Self.writeNotifications(fired.rows, spent: fired.spent, connection: connection, session: session)
                    events.append(ChangeEvent(databaseID: session.databaseID, kind: .notifications, sequence: newest))
                }
            }
            return (plan.results, events)
        }
        // Committed: wake this instance's waiters now, and the other instances' through NOTIFY.
        announce(events)
        return results
    }

    /// Appends notifications at the database's next cursor positions. The database row lock
    /// makes cursor order commit order; it is taken only by writes that notify.
    private static func writeNotifications(_ rows: [(subscription: Subscription, payload: JSONValue, record: Record)], spent: [String],
                                           connection: PGConnection, session: Session) throws -> Int64 {
        let count = Int64(rows.count)
        let newest = try connection.queryFirst("""
            WITH position AS (
                UPDATE databases SET notification_seq = notification_seq + \(count) WHERE id = \(session.databaseID)
                RETURNING notification_seq
            ), written AS (
                INSERT INTO notifications (database_id, seq, notification_id, subscription_id, notification_type, reason,
                                           record_name, record_type, zone_name, origin_device, payload)
                SELECT \(session.databaseID), position.notification_seq - \(count) + u.ordinal, u.id::uuid, u.subscription, u.kind,
                       u.reason, u.name, u.type, u.zone, \(session.deviceID), u.payload::jsonb
                FROM position, unnest(\(PGData.textArray(rows.map { $0.payload["notificationID"]?.stringValue ?? "" })),
                                      \(PGData.textArray(rows.map(\.subscription.id))),
                                      \(PGData.textArray(rows.map(\.subscription.kind.rawValue))),
                                      \(PGData.textArray(rows.map { $0.payload["reason"]?.stringValue ?? "" })),
                                      \(PGData.textArray(rows.map(\.record.recordName))),
                                      \(PGData.textArray(rows.map(\.record.recordType))),
                                      \(PGData.textArray(rows.map(\.record.zoneName))),
                                      \(PGData.textArray(rows.map(\.payload.serializedString))))
                     WITH ORDINALITY AS u(id, subscription, kind, reason, name, type, zone, payload, ordinal)
                RETURNING 1
            ), spent AS (
                DELETE FROM subscriptions WHERE database_id = \(session.databaseID) AND subscription_id = ANY(\(PGData.textArray(spent)))
                RETURNING 1
            )
            SELECT position.notification_seq, (SELECT count(*) FROM written), (SELECT count(*) FROM spent)
            FROM position
            """) { try $0.int64(0) }
        return newest ?? 0
    }

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

    /// Live records that reference the deleted ones with DELETE_SELF, transitively (as they are
    /// before deletion: delete notifications match against them).
    private static func cascadeTargets(_ connection: PGConnection, zoneID: Int64, zoneName: String, deleted: [String], exclude: [String]) throws -> [Record] {
        try connection.query("""
            WITH RECURSIVE doomed(name) AS (
                SELECT unnest(\(PGData.textArray(deleted)))
                UNION
                SELECT ref.source_name FROM record_references ref JOIN doomed d
                    ON ref.zone_id = \(zoneID) AND ref.target_name = d.name
            )
            SELECT \(unsafeColumns: recordColumns) FROM records r JOIN doomed d ON r.zone_id = \(zoneID) AND r.record_name = d.name
            WHERE NOT r.deleted AND NOT (r.record_name = ANY(\(PGData.textArray(exclude))))
            ORDER BY r.record_name
            """) { try decodeRecord($0, zoneName: zoneName) }
    }

    /// Every row change of a plan in one statement: saved rows, tombstones, DELETE_SELF edges and
    /// the zone's sequence.
    /// What the rows touched by a plan held before it: DELETE_SELF edges or asset references
    /// that the write must clear.
    struct PreviousState {
        var hadEdges: Bool
        var hadAssets: Bool

        init(_ plan: ModifyPlan, existing: [String: Record], cascaded: [String: Record]) {
            var edges = false, assets = false
            for write in plan.writes {
                let name: String = switch write {
                case .save(let record, _, _, _): record.recordName
                case .delete(let name, _, _): name
                }
                guard let before = existing[name] ?? cascaded[name] else { continue }
                for value in before.fields.values {
                    if value.references.contains(where: { $0.action == .deleteSelf }) { edges = true }
                    if !value.assets.isEmpty { assets = true }
                }
            }
            hadEdges = edges
            hadAssets = assets
        }
    }

    private static func write(_ plan: ModifyPlan, connection: PGConnection, zoneID: Int64, session: Session, now: Int64,
                              previous: PreviousState) throws {
        var saveNames: [String] = [], saveTypes: [String] = [], saveFields: [String] = [], saveWireForms: [Int64] = []
        var saveSequences: [Int64] = [], saveCreated: [Int64] = [], saveCreatedBy: [String] = [], saveCreatedUsers: [String] = []
        var saveExpires: [Int64] = []
        var deleteNames: [String] = [], deleteSequences: [Int64] = []
        var edgeTargets: [String] = [], edgeSources: [String] = []
        var assetRecords: [String] = [], assetChecksums: [String] = [], assetSizes: [Int64] = []
        var touched: [String] = []
        for write in plan.writes {
            switch write {
            case .save(let record, let sequence, let targets, let expiresAt):
                saveNames.append(record.recordName)
                saveTypes.append(record.recordType)
                let storage = Record.storage(of: record.fields)
                saveFields.append(storage.text)
                saveWireForms.append(storage.isWireForm ? 1 : 0)
                saveSequences.append(sequence)
                saveCreated.append(record.created.timestamp)
                saveCreatedBy.append(record.created.deviceID)
                saveCreatedUsers.append(record.created.userRecordName)
                saveExpires.append(expiresAt ?? Int64.min)
                for target in targets {
                    edgeTargets.append(target)
                    edgeSources.append(record.recordName)
                }
                for asset in record.fields.values.flatMap(\.assets) {
                    assetRecords.append(record.recordName)
                    assetChecksums.append(asset.fileChecksum)
                    assetSizes.append(asset.size)
                }
                touched.append(record.recordName)
            case .delete(let name, _, let sequence):
                deleteNames.append(name)
                deleteSequences.append(sequence)
                touched.append(name)
            }
        }
        // Only the parts this request needs: a plain save is one INSERT, the sequence and the
        // NOTIFY; edges and asset references are touched only when the new or the previous state
        // of a touched record has them.
        var parts: [(name: String, sql: SQL)] = []
        if !saveNames.isEmpty {
            parts.append(("saved", """
                INSERT INTO records (zone_id, record_name, record_type, fields, wire_fields, wire_fields_seq, change_seq,
                                     created_at, created_by_device, created_by_user,
                                     modified_at, modified_by_device, modified_by_user, deleted, expires_at)
                SELECT \(zoneID), u.n, u.t, u.f::jsonb, CASE WHEN u.w = 1 THEN u.f END, CASE WHEN u.w = 1 THEN u.seq END, u.seq,
                       'epoch'::timestamptz + u.c * interval '1 millisecond', u.cd, u.cu,
                       'epoch'::timestamptz + \(now) * interval '1 millisecond', \(session.deviceID), \(session.userRecordName),
                       false, 'epoch'::timestamptz + NULLIF(u.e, \(Int64.min)) * interval '1 millisecond'
                FROM unnest(\(PGData.textArray(saveNames)), \(PGData.textArray(saveTypes)), \(PGData.textArray(saveFields)),
                            \(PGData.int64Array(saveWireForms)), \(PGData.int64Array(saveSequences)), \(PGData.int64Array(saveCreated)),
                            \(PGData.textArray(saveCreatedBy)), \(PGData.textArray(saveCreatedUsers)), \(PGData.int64Array(saveExpires)))
                     AS u(n, t, f, w, seq, c, cd, cu, e)
                ON CONFLICT (zone_id, record_name) DO UPDATE SET
                    record_type = excluded.record_type, fields = excluded.fields, wire_fields = excluded.wire_fields, wire_fields_seq = excluded.wire_fields_seq,
                    change_seq = excluded.change_seq, created_at = excluded.created_at,
                    created_by_device = excluded.created_by_device, created_by_user = excluded.created_by_user,
                    modified_at = excluded.modified_at, modified_by_device = excluded.modified_by_device,
                    modified_by_user = excluded.modified_by_user, deleted = false, expires_at = excluded.expires_at
                RETURNING 1
                """))
        }
        if !deleteNames.isEmpty {
            parts.append(("tombstones", """
                UPDATE records r SET deleted = true, fields = '{}'::jsonb, wire_fields = NULL, change_seq = u.seq,
                    modified_at = 'epoch'::timestamptz + \(now) * interval '1 millisecond',
                    modified_by_device = \(session.deviceID), modified_by_user = \(session.userRecordName), expires_at = NULL
                FROM unnest(\(PGData.textArray(deleteNames)), \(PGData.int64Array(deleteSequences))) AS u(n, seq)
                WHERE r.zone_id = \(zoneID) AND r.record_name = u.n
                RETURNING 1
                """))
        }
        if !edgeTargets.isEmpty || previous.hadEdges {
            parts.append(("stale_edges", """
                DELETE FROM record_references ref
                WHERE ref.zone_id = \(zoneID) AND ref.source_name = ANY(\(PGData.textArray(touched)))
                  AND NOT EXISTS (SELECT 1 FROM unnest(\(PGData.textArray(edgeTargets)), \(PGData.textArray(edgeSources))) AS e(t, s)
                                  WHERE e.t = ref.target_name AND e.s = ref.source_name)
                RETURNING 1
                """))
            parts.append(("new_edges", """
                INSERT INTO record_references (zone_id, target_name, source_name)
                SELECT \(zoneID), e.t, e.s FROM unnest(\(PGData.textArray(edgeTargets)), \(PGData.textArray(edgeSources))) AS e(t, s)
                ON CONFLICT DO NOTHING
                RETURNING 1
                """))
        }
        parts.append(("sequence", "UPDATE zones SET change_seq = \(plan.lastSequence) WHERE id = \(zoneID) RETURNING 1"))
        if !assetRecords.isEmpty || previous.hadAssets {
            parts.append(("asset_refs", """
                SELECT u.r, decode(u.c, 'base64') AS sha256, u.z
                FROM unnest(\(PGData.textArray(assetRecords)), \(PGData.textArray(assetChecksums)), \(PGData.int64Array(assetSizes))) AS u(r, c, z)
                """))
            parts.append(("stale_asset_refs", """
                DELETE FROM asset_references ref
                WHERE ref.zone_id = \(zoneID) AND ref.record_name = ANY(\(PGData.textArray(touched)))
                  AND NOT EXISTS (SELECT 1 FROM asset_refs n WHERE n.r = ref.record_name AND n.sha256 = ref.sha256 AND n.z = ref.size)
                RETURNING ref.sha256, ref.size
                """))
            parts.append(("new_asset_refs", """
                INSERT INTO asset_references (zone_id, record_name, database_id, sha256, size)
                SELECT \(zoneID), n.r, \(session.databaseID), n.sha256, n.z FROM asset_refs n
                ON CONFLICT DO NOTHING
                RETURNING 1
                """))
            // Newly referenced or just released assets: the grace period counts from now.
            parts.append(("touched_assets", """
                UPDATE assets a SET last_referenced_at = now(), referenced = true
                WHERE a.database_id = \(session.databaseID) AND a.complete
                  AND ((a.sha256, a.size) IN (SELECT sha256, z FROM asset_refs) OR (a.sha256, a.size) IN (SELECT sha256, size FROM stale_asset_refs))
                RETURNING 1
                """))
        }
        var statement: SQL = "WITH "
        for (index, part) in parts.enumerated() {
            statement.append(index == 0 ? "" : ", ")
            statement.append(SQL(stringLiteral: part.name))
            statement.append(" AS (")
            statement.append(part.sql)
            statement.append(")")
        }
        // Data-modifying parts run whether or not they are read; the SELECT parts must be read.
        statement.append(" SELECT (SELECT count(*) FROM sequence)")
        if parts.contains(where: { $0.name == "asset_refs" }) { statement.append(", (SELECT count(*) FROM asset_refs)") }
        try connection.run(statement)
    }

    /// `records/lookup`: records by name, in request order; missing (or deleted) ones are nil.
    package func lookupRecords(_ session: Session, zoneName: String, names: [String]) async throws -> [Record?] {
        try await pool.withConnection { connection in
            guard let zone = try Self.zone(connection, databaseID: session.databaseID, name: zoneName), !zone.deleted else {
                throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.")
            }
            let found = try Self.records(connection, zoneID: zone.id, zoneName: zoneName, names: names)
            return names.map { name in found[name].flatMap { $0.deleted ? nil : $0 } }
        }
    }
}
