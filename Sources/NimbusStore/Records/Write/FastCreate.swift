import NimbusCore
import NimbusPostgres
import NimbusSupport

/// One request's creates, planned against `WriteCaches` without reading: what the write
/// statement inserts and what it checks first.
struct PlannedCreates: Sendable {
    var session: Session
    /// `.cached` when the session came from the cache: the statement checks the token.
    var proof: SessionProof
    var zoneID: Int64
    var schemaVersion: Int64
    var now: Int64
    /// The records' names, types, fields' wire forms and expiries (epoch milliseconds,
    /// `Int64.min` for none), already in the statement's array parameters.
    private(set) var names = PGArrayElements.text
    private(set) var types = PGArrayElements.text
    private(set) var fields = PGArrayElements.text
    private(set) var expires = PGArrayElements.int64

    init(session: Session, proof: SessionProof, zoneID: Int64, schemaVersion: Int64, now: Int64) {
        self.session = session
        self.proof = proof
        self.zoneID = zoneID
        self.schemaVersion = schemaVersion
        self.now = now
    }

    /// Records in the request.
    var count: Int { names.count }

    mutating func reserve(records: Int, wireBytes: Int) {
        names.reserve(count: records, bytes: records * 40)
        types.reserve(count: records, bytes: records * 24)
        fields.reserve(count: records, bytes: wireBytes)
        expires.reserve(count: records, bytes: records * 8)
    }

    mutating func append(name: String, type: String, wireFields: [UInt8], expiresAt: Int64?) {
        names.append(name)
        types.append(type)
        fields.append(utf8: wireFields)
        expires.append(expiresAt ?? Int64.min)
    }
}

/// What became of a `PlannedCreates` in a batch.
enum CreateOutcome: Sendable {
    /// Written: the records took the sequences `firstSequence ..< firstSequence + count`, in order.
    case written(firstSequence: Int64)
    /// A check failed or a record exists: the request takes the full path.
    case notTaken
    /// The batch it shared failed a check of some member: write it alone.
    case retryAlone
    case failed(any Error)
}

/// The fastest write strategy, for requests that only create records (see
/// `RecordStore.createWithoutReading`). It checks an unverified token inside its statement.
struct FastCreate: RecordWriteStrategy {
    var checksTokenItself: Bool { true }

    func attempt(_ request: inout RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]? {
        try await createWithoutReading(&request, in: store)
    }

    /// Records one combined statement gathers at most.
    static let maxCombinedRecords = 1_000

    static func makeCombiner(pool: PGPool, batchesInFlight: Int) -> WriteCombiner<PlannedCreates, CreateOutcome> {
        WriteCombiner(maxBatchesInFlight: batchesInFlight, maxBatchWeight: maxCombinedRecords,
                      key: { $0.zoneID }, weight: { $0.count }, run: { batch, execution in await writeCreates(batch, pool: pool, execution: execution) })
    }
}

extension Store {
    /// Batches of creates in flight at once (see `WriteCombiner`). One statement at a time per
    /// instance makes the largest batches: measured with 16 writers over 32 zones (bench/records.sh,
    /// fsync on), 1 gave 5.3k records/s and 2 gave 4.0k.
    package static let defaultWriteBatchesInFlight = 1

    /// Statements the create fast path ran, the requests they carried, and the seconds they
    /// took (for metrics).
    package var createBatchCounts: (batches: Int, requests: Int, seconds: Double) {
        let counts = database.createCombiner.counts
        return (counts.batches, counts.submissions, counts.runSeconds)
    }
}

extension FastCreate {
    /// The fastest path, for requests that only create records: planned against what earlier
    /// requests left in `caches` (the session, the zone's id, the schema and its version), without
    /// reading, then written by a statement that checks all of it — the token is live, the zone is
    /// this database's and not deleted, the schema version is the planned one, the database has no
    /// subscriptions —, bumps the zone's sequence under its row lock and inserts the records.
    /// Concurrent requests share that statement (`WriteCombiner`). A failed check or a record that
    /// already exists (a retried create, a tombstone) aborts the statement whole (40001) and the
    /// request takes the full path. nil: not taken; the plan `ModifyPlanner` made, if it made
    /// one, is handed on in `request.handedPlan`.
    func createWithoutReading(_ request: inout RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]? {
        let session = request.session, zoneName = request.zoneName, operations = request.operations
        let atomic = request.atomic, limits = request.limits, caches = store.caches
        guard !operations.isEmpty, operations.allSatisfy({ (try? $0.get())?.kind == .create }),
              let zoneID = caches.zoneID(WriteCaches.ZoneKey(databaseID: session.databaseID, zoneName: zoneName)),
              let schema = caches.schema(WriteCaches.SchemaKey(container: session.container, environment: session.environment)),
              RecordStore.deleteSelfTargets(operations).isEmpty, RecordStore.assetCandidates(operations).isEmpty else { return nil }
        let now = store.clock.nowMilliseconds()
        let context = ModifyPlanner.Context(
            zoneName: zoneName, userRecordName: session.userRecordName, deviceID: session.deviceID, now: now,
            baseSequence: 0, environment: session.environment, maxRecordBytes: limits.maxRecordBytes, atomic: atomic)
        // The lean planner takes the common shape; for the rest `ModifyPlanner` plans, against no
        // records, and its plan is handed on when this strategy passes.
        var handedPlan: HandedPlan? = nil
        var creates = CreatePlanner.plan(operations, schema: schema.types, context: context)
        if creates == nil {
            let plan = ModifyPlanner(context: context).plan(operations, existing: [:], schema: schema.types)
            handedPlan = HandedPlan(plan: plan, baseSequence: 0, now: now, schemaVersion: schema.version, rows: .none)
            creates = CreatePlanner.created(from: plan, operations: operations.count)
        }
        guard let created = creates else {
            request.handedPlan = handedPlan
            return nil
        }
        var planned = PlannedCreates(session: session, proof: request.proof, zoneID: zoneID, schemaVersion: schema.version, now: now)
        // Each record is serialised once: the wire form is stored (no assets here: it is the
        // storage form too, `Record.storage(of:)`) and is the answer's.
        planned.reserve(records: created.count, wireBytes: created.reduce(0) { $0 + $1.wireFields.count })
        for record in created {
            planned.append(name: record.record.recordName, type: record.record.recordType, wireFields: record.wireFields,
                           expiresAt: record.expiresAt)
        }
        var outcome = await store.database.createCombiner.submit(planned, on: store.execution)
        if case .retryAlone = outcome {
            outcome = await Self.writeCreates([planned], pool: store.database.rawPool, execution: store.execution)[0]
        }
        let first: Int64
        switch outcome {
        case .written(let firstSequence): first = firstSequence
        case .notTaken, .retryAlone:
            request.handedPlan = handedPlan
            return nil
        case .failed(let error): throw StorePool.domainError(error)
        }
        // The statement numbered the records in `names` (the operations') order from `first`.
        let results = created.enumerated().map { index, created -> ModifyResult in
            var answer = created.record
            answer.changeTag = ChangeTag.make(sequence: first + Int64(index))
            return .saved(answer, desiredKeys: created.desiredKeys)
        }
        let last = first + Int64(planned.count) - 1
        store.announce([ChangeEvent(databaseID: session.databaseID, kind: .records, zoneID: zoneID, sequence: last)])
        return results
    }
}

extension FastCreate {
    /// Writes a batch: one statement for one request, the combined statement for several. A
    /// combined statement that fails a check is undone whole and its members retry alone, so one
    /// request's existing record never sends the others down the full path.
    static func writeCreates(_ batch: [PlannedCreates], pool: PGPool, execution: Execution = .offloaded) async -> [CreateOutcome] {
        let statement = batch.count == 1 ? singleCreateStatement(batch[0]) : combinedCreateStatement(batch)
        do {
            let starts = try await pool.queryFirst(statement, on: execution) { try $0.optionalString(0) }
            let firsts = (starts ?? nil)?.split(separator: ",").compactMap { Int64($0) } ?? []
            guard firsts.count == batch.count else { return batch.map { _ in batch.count == 1 ? .notTaken : .retryAlone } }
            return firsts.map { .written(firstSequence: $0) }
        } catch let error as PGError where error.sqlState == PGError.SQLState.serializationFailure
                                        || error.sqlState == PGError.SQLState.uniqueViolation {
            // A check failed (nimbus_retry), or a record exists already: a plain INSERT fails on
            // it, which costs PostgreSQL less than ON CONFLICT's check of every row before its
            // insert (7% of its work for 100-record requests).
            return batch.map { _ in batch.count == 1 ? .notTaken : .retryAlone }
        } catch {
            return batch.map { _ in .failed(error) }
        }
    }

    /// One request's creates: the zone's row lock, its checks, the inserts, and the first
    /// sequence as text (the combined statement's answer, for one). The text is a template built
    /// once (`SQL+Template`); the checks are the combined statement's for one request.
    ///
    /// Kept beside the combined statement on purpose (issue #28 asked for one): a request alone
    /// written as a batch of one cost Nimbus 12.5% more instructions per one-record create
    /// (callgrind, bench/callgrind.sh `one`: 330,600 Ir against 293,799) and 1.9% more per
    /// 100-record request (10,080,574 against 9,894,557), building the combined statement's text
    /// and eleven one-element arrays instead of binding this template.
    private static func singleCreateStatement(_ planned: PlannedCreates) -> SQL {
        let session = planned.session
        return singleCreate.binding([
            .int64(Int64(planned.count)), .int64(planned.zoneID), .int64(session.databaseID), .text(session.container),
            .text(session.environment.rawValue), .int64(planned.schemaVersion), .bytea(planned.proof.uncheckedTokenDigest ?? []), .text(session.tokenID),
            .int64(planned.now), .text(session.deviceID), .text(session.userRecordName), .int64(Int64.min),
            planned.names.pgData, planned.types.pgData, planned.fields.pgData, planned.expires.pgData,
        ])
    }

    /// $1 records, $2 zone id, $3 database id, $4 container, $5 environment, $6 schema version,
    /// $7 token digest (empty: the session is verified), $8 token id, $9 now (epoch ms), $10 device,
    /// $11 user record name, $12 "no expiry", $13–$16 names, types, wire forms, expiries.
    private static let singleCreate: SQL = """
        WITH z AS (
            UPDATE zones SET change_seq = change_seq + \(parameter: 1)
            WHERE id = \(parameter: 2) AND database_id = \(parameter: 3) AND NOT deleted
              AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE database_id = \(parameter: 3))
              AND COALESCE((SELECT v.version FROM schema_versions v
                            WHERE v.container = \(parameter: 4) AND v.environment = \(parameter: 5)), 0) = \(parameter: 6)
              AND (length(\(parameter: 7)) = 0 OR EXISTS (SELECT 1 FROM device_tokens WHERE token_sha256 = \(parameter: 7)
                                                           AND token_id = \(parameter: 8) AND revoked_at IS NULL))
            RETURNING change_seq - \(parameter: 1) AS base
        ), saved AS (
            INSERT INTO records (\(unsafeColumns: RecordRows.insertColumns))
            SELECT \(parameter: 2), u.n, u.t, u.f::jsonb, u.f, z.base + u.ord, z.base + u.ord,
                   'epoch'::timestamptz + \(parameter: 9) * interval '1 millisecond', \(parameter: 10), \(parameter: 11),
                   'epoch'::timestamptz + \(parameter: 9) * interval '1 millisecond', \(parameter: 10), \(parameter: 11),
                   false, 'epoch'::timestamptz + NULLIF(u.e, \(parameter: 12)) * interval '1 millisecond'
            FROM z, unnest(\(parameter: 13), \(parameter: 14), \(parameter: 15), \(parameter: 16)) WITH ORDINALITY AS u(n, t, f, e, ord)
            RETURNING 1
        )
        SELECT ((SELECT base FROM z) + 1)::text, nimbus_retry(\(parameter: 1), (SELECT count(*) FROM saved))
        """

    /// Several requests' creates in one statement: each request's checks (as in the single
    /// statement; any failure aborts the whole statement), one sequence bump per zone under its
    /// row lock, the inserts numbered per zone in request order, and each request's first
    /// sequence, comma-separated in request order.
    private static func combinedCreateStatement(_ batch: [PlannedCreates]) -> SQL {
        var zoneIDs: [Int64] = [], databaseIDs: [Int64] = [], counts: [Int64] = [], versions: [Int64] = [], nows: [Int64] = []
        var digests: [[UInt8]] = [], tokenIDs: [String] = [], containers: [String] = [], environments: [String] = []
        var devices: [String] = [], users: [String] = []
        var rowRequests: [Int64] = [], rowOrdinals: [Int64] = []
        var names = PGArrayElements.text, types = PGArrayElements.text, fields = PGArrayElements.text, expires = PGArrayElements.int64
        for (index, planned) in batch.enumerated() {
            let session = planned.session
            zoneIDs.append(planned.zoneID)
            databaseIDs.append(session.databaseID)
            counts.append(Int64(planned.count))
            versions.append(planned.schemaVersion)
            nows.append(planned.now)
            digests.append(planned.proof.uncheckedTokenDigest ?? [])
            tokenIDs.append(session.tokenID)
            containers.append(session.container)
            environments.append(session.environment.rawValue)
            devices.append(session.deviceID)
            users.append(session.userRecordName)
            for ordinal in 0..<planned.count {
                rowRequests.append(Int64(index + 1))
                rowOrdinals.append(Int64(ordinal))
            }
            names.append(contentsOf: planned.names)
            types.append(contentsOf: planned.types)
            fields.append(contentsOf: planned.fields)
            expires.append(contentsOf: planned.expires)
        }
        return """
            WITH request AS (
                SELECT * FROM unnest(\(PGData.int64Array(zoneIDs)), \(PGData.int64Array(databaseIDs)), \(PGData.int64Array(counts)),
                                     \(PGData.int64Array(versions)), \(PGData.int64Array(nows)), \(PGData.byteaArray(digests)),
                                     \(PGData.textArray(tokenIDs)), \(PGData.textArray(containers)), \(PGData.textArray(environments)),
                                     \(PGData.textArray(devices)), \(PGData.textArray(users)))
                    WITH ORDINALITY AS q(zone_id, database_id, n, version, now, digest, token_id, container, environment, device, usr, i)
            ), checked AS (
                SELECT q.* FROM request q
                WHERE NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.database_id = q.database_id)
                  AND COALESCE((SELECT v.version FROM schema_versions v
                                WHERE v.container = q.container AND v.environment = q.environment), 0) = q.version
                  AND (length(q.digest) = 0 OR EXISTS (SELECT 1 FROM device_tokens t WHERE t.token_sha256 = q.digest
                                                        AND t.token_id = q.token_id AND t.revoked_at IS NULL))
            ), locked AS MATERIALIZED (
                -- The zones' row locks in id order, before any is updated: two batches (two
                -- instances, or --write-batches above 1) over the same zones would otherwise lock
                -- them in their join's order and could deadlock.
                SELECT zones.id FROM zones WHERE zones.id IN (SELECT zone_id FROM checked) ORDER BY zones.id FOR UPDATE
            ), z AS (
                UPDATE zones SET change_seq = zones.change_seq + p.n
                FROM (SELECT zone_id, database_id, sum(n)::bigint AS n FROM checked
                      WHERE zone_id IN (SELECT id FROM locked) GROUP BY zone_id, database_id) p
                WHERE zones.id = p.zone_id AND zones.database_id = p.database_id AND NOT zones.deleted
                RETURNING zones.id, zones.change_seq - p.n AS base
            ), starts AS (
                SELECT c.i, c.zone_id, c.device, c.usr, c.now,
                       z.base + 1 + sum(c.n) OVER (PARTITION BY c.zone_id ORDER BY c.i) - c.n AS first_seq
                FROM checked c JOIN z ON z.id = c.zone_id
            ), saved AS (
                INSERT INTO records (\(unsafeColumns: RecordRows.insertColumns))
                SELECT s.zone_id, r.n, r.t, r.f::jsonb, r.f, s.first_seq + r.o, s.first_seq + r.o,
                       'epoch'::timestamptz + s.now * interval '1 millisecond', s.device, s.usr,
                       'epoch'::timestamptz + s.now * interval '1 millisecond', s.device, s.usr,
                       false, 'epoch'::timestamptz + NULLIF(r.e, \(Int64.min)) * interval '1 millisecond'
                FROM unnest(\(PGData.int64Array(rowRequests)), \(PGData.int64Array(rowOrdinals)), \(names.pgData),
                            \(types.pgData), \(fields.pgData), \(expires.pgData)) AS r(i, o, n, t, f, e)
                JOIN starts s ON s.i = r.i
                RETURNING 1
            )
            SELECT (SELECT string_agg(first_seq::text, ',' ORDER BY i) FROM starts),
                   nimbus_retry(\(Int64(names.count)), (SELECT count(*) FROM saved)) + nimbus_retry(\(Int64(batch.count)), (SELECT count(*) FROM starts))
            """
    }
}
