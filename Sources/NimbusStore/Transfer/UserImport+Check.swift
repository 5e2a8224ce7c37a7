import NimbusCore
import NimbusSupport

extension UserImport {
    /// Checks one database of a plan against this server's schema of its container before
    /// anything is written (docs/operations.md: an import checks everything first): the export's
    /// schema merges without changing a field's type; every record types against the merged
    /// schema as the write path types it (`FieldTyper`: a field's type, production's deployed
    /// fields) and fits `limits.maxRecordBytes`; every subscription is valid against it.
    /// Pure: the caller reads `serverSchema` and writes only when this returns.
    static func check(_ plan: DatabasePlan, serverSchema current: [String: RecordTypeSchema], limits: Limits) throws {
        let place = "\(plan.entry.container) \(plan.entry.environment.rawValue)"
        func refuse(_ what: String) -> TransferError { TransferError("\(what); nothing was imported") }
        // What `SchemaStore.importSchema` will make of the server's schema.
        var merged = current
        for (type, definition) in plan.schema.recordTypes.sorted(by: { $0.key < $1.key }) {
            var mergedType = current[type] ?? RecordTypeSchema(name: type)
            for (field, fieldType) in definition.fields.sorted(by: { $0.key < $1.key }) {
                if let existing = current[type]?.fields[field], existing != fieldType {
                    throw refuse("field \(type).\(field) is \(existing.schemaName) in \(place) on this server but \(fieldType.schemaName) in the export")
                }
                mergedType.fields[field] = fieldType
            }
            mergedType.retention = definition.retention
            mergedType.appendOnly = definition.appendOnly
            merged[type] = mergedType
        }
        // Assets are checked by `read` (file, checksum, size) and get their receipts when stored.
        let typer = FieldTyper(environment: plan.entry.environment, assetCheck: { _ in nil })
        for zone in plan.zones {
            for operation in zone.records {
                let type = operation.recordType ?? ""   // `read` gives every record its type
                let typed: FieldTyper.Typed
                switch typer.type(operation.fields, recordName: operation.recordName, recordType: type, schema: merged[type]) {
                case .success(let value): typed = value
                case .failure(let error): throw refuse("\(place) zone \(zone.name): \(error.reason)")
                }
                // A development schema grows by the fields a save brings, as the write path does.
                if !typed.newFields.isEmpty {
                    merged[type, default: RecordTypeSchema(name: type)].fields
                        .merge(typed.newFields) { known, _ in known }
                }
                let fields = typed.changes.compactMapValues { $0 }
                guard Record.storedSize(fields, fitsIn: limits.maxRecordBytes) else {
                    throw refuse("""
                        \(place) zone \(zone.name): record \(operation.recordName) has \(Record.storedSize(fields)) bytes of fields, \
                        more than this server's maxRecordBytes (\(limits.maxRecordBytes)); raise it with --max-record-bytes \
                        (as `nimbus serve` runs with), or leave the record out of the export
                        """)
                }
            }
        }
        for subscription in plan.subscriptions {
            do {
                _ = try Subscription.parse(subscription, schema: merged, limits: limits)
            } catch {
                throw refuse("\(plan.entry.path)/subscriptions.json: a subscription is not valid on this server: \(error.reason)")
            }
        }
    }
}
