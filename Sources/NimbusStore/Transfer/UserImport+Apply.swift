import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

extension UserImport {
    /// What an import did, per zone.
    package struct Report: Sendable {
        package var lines: [String] = []
        package var records = 0
        package var assets = 0
        package var subscriptions = 0
    }

    /// Writes a checked plan into `user`'s databases, with this server's `limits`. Throws before
    /// writing when the user is missing or a database of the plan does not pass `check` against
    /// this server's schema; a failure later (a record that exists here with other content, a
    /// lost connection) says what was done.
    package func apply(_ plan: Plan, user: String, limits: Limits = Limits(), progress: (String) -> Void) async throws -> Report {
        guard let owner = try await pool.queryFirst("SELECT id, record_name FROM users WHERE name = \(user)", decode: { row in
            (id: try row.int64(0), recordName: try row.string(1))
        }) else {
            throw TransferError("there is no user \(Names.quoted(user)) on this server; create it with `nimbus user add \(user)` first; nothing was imported")
        }
        for database in plan.databases {
            let current = try await schemas.schema(container: database.entry.container, environment: database.entry.environment)
            try Self.check(database, serverSchema: current.recordTypes, limits: limits)
        }
        var report = Report()
        var done: [String] = []
        for database in plan.databases {
            let entry = database.entry
            do {
                try await schemas.importSchema(database.schema, environment: entry.environment)
                let databaseID = try await accounts.privateDatabase(
                    userID: owner.id, container: entry.container, environment: entry.environment)
                let session = Session(userID: owner.id, userRecordName: owner.recordName, tokenID: "", deviceID: Self.device,
                                      databaseID: databaseID, container: entry.container, environment: entry.environment)
                let receipts = try await storeAssets(plan, of: database, databaseID: databaseID, report: &report)
                for zone in database.zones {
                    try await importZone(zone.name, zone.records, session: session, receipts: receipts, limits: limits)
                    report.records += zone.records.count
                    let line = "\(entry.container) \(entry.environment.rawValue) zone \(zone.name): \(zone.records.count) records"
                    report.lines.append(line)
                    done.append(line)
                    progress(line)
                }
                report.subscriptions += try await importSubscriptions(database.subscriptions, session: session, limits: limits)
            } catch {
                let finished = done.isEmpty ? "no zone was finished" : "finished before it: \(done.joined(separator: "; "))"
                throw TransferError("""
                    the import stopped in \(entry.container) \(entry.environment.rawValue): \(Self.describe(error)) (\(finished)); \
                    once that is fixed, run the same import again to finish: records already imported are kept as they are
                    """)
            }
        }
        return report
    }

    /// Stores the plan's asset files in the database (once each); the receipts to save them with.
    private func storeAssets(_ plan: Plan, of target: DatabasePlan, databaseID: Int64, report: inout Report) async throws -> [String: String] {
        var receipts: [String: String] = [:]
        for checksum in target.assets.sorted() {
            guard let file = plan.assetFiles[checksum], let sha256 = Data(base64Encoded: checksum).map(Array.init) else { continue }
            let size = try await assets.storeFile(file, databaseID: databaseID, sha256: sha256)
            receipts[checksum] = assets.receipt(databaseID: databaseID, sha256: sha256, size: size)
            report.assets += 1
        }
        return receipts
    }

    private func importZone(_ zoneName: String, _ operations: [RecordOperation], session: Session, receipts: [String: String],
                            limits: Limits) async throws {
        if zoneName != Names.defaultZone {
            for result in try await zones.modifyZones(session, operations: [.create(zoneName)]) {
                if case .failed(_, let error) = result { throw TransferError("zone \(zoneName): \(error.reason)") }
            }
        }
        let batch = limits.maxOperationsPerRequest
        var start = 0
        while start < operations.count {
            let slice = operations[start..<min(start + batch, operations.count)].map { Self.withReceipts($0, receipts) }
            let results = try await records.modifyRecords(
                session, zoneName: zoneName, operations: slice.map { .success($0) }, atomic: false, limits: limits)
            for case .failed(let error) in results {
                throw TransferError("record \(error.recordName ?? "?") of zone \(zoneName): \(error.reason)")
            }
            start += batch
        }
    }

    private func importSubscriptions(_ subscriptions: [JSONValue], session: Session, limits: Limits) async throws -> Int {
        guard !subscriptions.isEmpty else { return 0 }
        let schema = try await schemas.schema(container: session.container, environment: session.environment)
        var operations: [SubscriptionOperation] = []
        for json in subscriptions {
            do {
                operations.append(.save(try Subscription.parse(json, schema: schema.recordTypes, limits: limits), mustExist: false))
            } catch {
                throw TransferError("a subscription of the export is not valid here: \(error.reason)")
            }
        }
        for result in try await self.subscriptions.modifySubscriptions(session, operations: operations) {
            if case .failed(let id, let error) = result { throw TransferError("subscription \(id): \(error.reason)") }
        }
        return operations.count
    }

    /// The operation with each asset value carrying this database's receipt for it.
    static func withReceipts(_ operation: RecordOperation, _ receipts: [String: String]) -> RecordOperation {
        var copy = operation
        copy.fields = operation.fields.map { field in
            guard let type = field.declaredType, type.hasPrefix("ASSETID") else { return field }
            var field = field
            field.value = Self.addingReceipts(field.value, receipts)
            return field
        }
        return copy
    }

    private static func addingReceipts(_ value: JSONValue, _ receipts: [String: String]) -> JSONValue {
        switch value {
        case .array(let values):
            return .array(values.map { addingReceipts($0, receipts) })
        case .object(var object):
            if case .string(let checksum)? = object["fileChecksum"], let receipt = receipts[checksum] {
                object["receipt"] = .string(receipt)
                object["downloadURL"] = nil
            }
            return .object(object)
        default:
            return value
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as TransferError: error.description
        case let error as SyncError: error.reason
        case let error as PGError: error.message
        default: "\(error)"
        }
    }
}
