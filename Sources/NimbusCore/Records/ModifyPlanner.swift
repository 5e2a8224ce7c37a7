import NimbusSupport
import Foundation

/// A row to write for `records/modify`.
package enum RecordWrite: Sendable, Hashable {
    /// Insert or replace a live record; `deleteSelfTargets` are the records it references with
    /// `DELETE_SELF` (deleting one of them deletes this record); `expiresAt` from retention.
    case save(Record, sequence: Int64, deleteSelfTargets: [String], expiresAt: Int64?)
    /// Turn a record into a tombstone.
    case delete(recordName: String, recordType: String, sequence: Int64)
}

/// The answer for one operation, in request order.
package enum ModifyResult: Sendable, Hashable {
    case saved(Record, desiredKeys: Set<String>?)
    case deleted(recordName: String)
    case failed(ItemError)
}

/// What `records/modify` will do: per-operation results, the rows to write, and what the
/// development schema learns.
package struct ModifyPlan: Sendable {
    package var results: [ModifyResult] = []
    package var writes: [RecordWrite] = []
    /// Record types the schema gains fields (or the type itself) through this request.
    package var schemaAdditions: [String: [String: FieldType]] = [:]
    /// The zone's change sequence after the writes.
    package var lastSequence: Int64
    /// Names deleted by this request (cascades are looked up from these).
    package var deletedNames: [String] = []

    /// Appends tombstones for records deleted by `DELETE_SELF` cascades.
    package mutating func addCascade(_ records: [(recordName: String, recordType: String)]) {
        for record in records {
            lastSequence += 1
            writes.append(.delete(recordName: record.recordName, recordType: record.recordType, sequence: lastSequence))
            deletedNames.append(record.recordName)
        }
    }

    package var hasWrites: Bool { !writes.isEmpty }

    /// The plan with its sequences, and the change tags of the records it saves, counted from
    /// `base` instead of `old` (a plan handed on to a write that read the zone's sequence).
    package func rebased(from old: Int64, onto base: Int64) -> ModifyPlan {
        guard old != base else { return self }
        let delta = base - old
        var plan = self
        var tags: [String: String] = [:]
        plan.writes = writes.map { write in
            switch write {
            case .save(var record, let sequence, let targets, let expiresAt):
                record.changeTag = ChangeTag.make(sequence: sequence + delta)
                tags[record.recordName] = record.changeTag
                return .save(record, sequence: sequence + delta, deleteSelfTargets: targets, expiresAt: expiresAt)
            case .delete(let name, let type, let sequence):
                return .delete(recordName: name, recordType: type, sequence: sequence + delta)
            }
        }
        plan.lastSequence += delta
        // Names are distinct in a request: a saved result with a written record's name is its answer.
        plan.results = results.map { result in
            guard case .saved(var record, let keys) = result, let tag = tags[record.recordName] else { return result }
            record.changeTag = tag
            return .saved(record, desiredKeys: keys)
        }
        return plan
    }
}

/// Plans `records/modify` against the zone's current records (docs/api.md Records/modify and Details).
package struct ModifyPlanner: Sendable {
    package struct Context: Sendable {
        package var zoneName: String
        package var userRecordName: String
        package var deviceID: String
        /// Milliseconds since the epoch, for `created`/`modified` and retention.
        package var now: Int64
        /// The zone's change sequence before this request (under its row lock).
        package var baseSequence: Int64
        package var environment: Environment
        package var maxRecordBytes: Int
        package var atomic: Bool
        /// Checks ASSETID values (see `FieldTyper.assetCheck`); nil refuses them.
        package var assetCheck: (@Sendable (AssetValue) -> String?)? = nil

        package init(zoneName: String, userRecordName: String, deviceID: String, now: Int64, baseSequence: Int64,
                     environment: Environment, maxRecordBytes: Int, atomic: Bool) {
            self.zoneName = zoneName
            self.userRecordName = userRecordName
            self.deviceID = deviceID
            self.now = now
            self.baseSequence = baseSequence
            self.environment = environment
            self.maxRecordBytes = maxRecordBytes
            self.atomic = atomic
        }
    }

    package let context: Context

    package init(context: Context) {
        self.context = context
    }

    /// - Parameters:
    ///   - operations: parsed operations (malformed ones already item errors), each naming a
    ///     distinct record (`create` without a name has been given a UUID).
    ///   - existing: current rows (live or tombstones) for the operations' records and for the
    ///     targets of their `DELETE_SELF` references.
    ///   - schema: the container's record types for this environment.
    package func plan(_ operations: [Result<RecordOperation, ItemError>], existing: [String: Record],
                      schema: [String: RecordTypeSchema]) -> ModifyPlan {
        var plan = ModifyPlan(lastSequence: context.baseSequence)
        var workingSchema = schema
        var pending: [Pending] = []
        let typer = FieldTyper(environment: context.environment, assetCheck: context.assetCheck)

        for entry in operations {
            switch entry {
            case .failure(let error):
                pending.append(.failed(error))
            case .success(let operation):
                switch outcome(of: operation, current: existing[operation.recordName], schema: &workingSchema,
                               additions: &plan.schemaAdditions, typer: typer) {
                case .failure(let error): pending.append(.failed(error))
                case .success(let step): pending.append(step)
                }
            }
        }

        // DELETE_SELF targets must exist after this request, in this zone.
        let deletedHere = Set(pending.compactMap { step -> String? in
            if case .delete(let name, _) = step { return name } else { return nil }
        })
        // Until nothing changes: a save refused here no longer makes its name exist for others.
        var changed = true
        while changed {
            changed = false
            let savedHere = Set(pending.compactMap { step -> String? in
                if case .save(let record, _, _, _) = step { return record.recordName } else { return nil }
            })
            for index in pending.indices {
                guard case .save(let record, _, let targets, _) = pending[index] else { continue }
                for target in targets {
                    let existsAfter = savedHere.contains(target) || (existing[target].map { !$0.deleted } ?? false && !deletedHere.contains(target))
                    if !existsAfter {
                        pending[index] = .failed(ItemError(.validatingReferenceError,
                            "Record \(record.recordName) references \(target) with DELETE_SELF, but \(target) does not exist in zone \(context.zoneName).",
                            recordName: record.recordName))
                        changed = true
                        break
                    }
                }
            }
        }

        let anyFailed = pending.contains { if case .failed = $0 { return true } else { return false } }
        if context.atomic && anyFailed {
            plan.results = pending.map { step in
                if case .failed(let error) = step { return .failed(error) }
                return .failed(ItemError(.atomicError, "Another operation of this atomic request failed; nothing was saved.",
                                         recordName: step.recordName))
            }
            plan.schemaAdditions = [:]
            return plan
        }

        for step in pending {
            switch step {
            case .failed(let error):
                plan.results.append(.failed(error))
            case .unchanged(let record, let desiredKeys):
                plan.results.append(.saved(record, desiredKeys: desiredKeys))
            case .save(var record, let desiredKeys, let targets, let expiresAt):
                plan.lastSequence += 1
                record.changeTag = ChangeTag.make(sequence: plan.lastSequence)
                plan.writes.append(.save(record, sequence: plan.lastSequence, deleteSelfTargets: targets, expiresAt: expiresAt))
                plan.results.append(.saved(record, desiredKeys: desiredKeys))
            case .delete(let name, let type):
                if let type {
                    plan.lastSequence += 1
                    plan.writes.append(.delete(recordName: name, recordType: type, sequence: plan.lastSequence))
                    plan.deletedNames.append(name)
                }
                plan.results.append(.deleted(recordName: name))
            }
        }
        if anyFailed {
            // Schema additions only count for operations that were saved.
            var kept: [String: [String: FieldType]] = [:]
            for write in plan.writes {
                guard case .save(let record, _, _, _) = write, let added = plan.schemaAdditions[record.recordType] else { continue }
                kept[record.recordType, default: [:]].merge(added.filter { record.fields[$0.key] != nil }) { first, _ in first }
                if schema[record.recordType] == nil, kept[record.recordType] == nil { kept[record.recordType] = [:] }
            }
            plan.schemaAdditions = kept
        }
        return plan
    }

    // MARK: - One operation

    private enum Pending {
        case failed(ItemError)
        /// The idempotent create retry: answer the stored record, write nothing.
        case unchanged(Record, Set<String>?)
        case save(Record, Set<String>?, deleteSelfTargets: [String], expiresAt: Int64?)
        /// `type` nil: nothing to delete (forceDelete of a missing record).
        case delete(String, type: String?)

        var recordName: String? {
            switch self {
            case .failed(let error): error.recordName
            case .unchanged(let record, _): record.recordName
            case .save(let record, _, _, _): record.recordName
            case .delete(let name, _): name
            }
        }
    }

    private func outcome(of operation: RecordOperation, current: Record?, schema: inout [String: RecordTypeSchema],
                         additions: inout [String: [String: FieldType]], typer: FieldTyper) -> Result<Pending, ItemError> {
        let name = operation.recordName
        let live = current.flatMap { $0.deleted ? nil : $0 }
        func fail(_ code: SyncError.Code, _ reason: String, server: Record? = nil) -> Result<Pending, ItemError> {
            .failure(ItemError(code, reason, recordName: name, serverRecord: server))
        }

        // Deletes.
        if operation.kind.isDelete {
            guard let live else {
                return operation.kind == .forceDelete ? .success(.delete(name, type: nil))
                    : fail(.notFound, "Record \(name) does not exist.")
            }
            if operation.kind == .delete, operation.changeTag != live.changeTag {
                return fail(.conflict, "Record \(name) was changed since recordChangeTag \(operation.changeTag ?? ""); fetch it and retry.", server: live)
            }
            return .success(.delete(name, type: live.recordType))
        }

        // Saves: the record must exist unless the kind creates.
        if live == nil, !operation.kind.createsMissing {
            return fail(.notFound, "Record \(name) does not exist.")
        }
        if let live, operation.kind.checksTag, operation.changeTag != live.changeTag {
            return fail(.conflict, "Record \(name) was changed since recordChangeTag \(operation.changeTag ?? ""); fetch it and retry.", server: live)
        }
        let recordType = operation.recordType ?? live?.recordType ?? ""
        if operation.kind == .create, let live, live.recordType != recordType {
            return fail(.exists, "Record \(name) already exists as a \(live.recordType).", server: live)
        }
        if let live, live.recordType != recordType {
            return fail(.badRequest, "Record \(name) is a \(live.recordType); its type cannot change to \(recordType).")
        }
        if let live, operation.kind != .create, schema[recordType]?.appendOnly == true {
            return fail(.accessDenied, "\(recordType) records are append-only: they can be created and deleted, not updated (record \(live.recordName)).")
        }

        let typed: FieldTyper.Typed
        switch typer.type(operation.fields, recordName: name, recordType: recordType, schema: schema[recordType]) {
        case .failure(let error): return .failure(error)
        case .success(let value): typed = value
        }

        var fields: [String: FieldValue]
        if operation.kind.replacesAllFields || live == nil {
            fields = [:]
            fields.reserveCapacity(typed.changes.count)
        } else {
            fields = live?.fields ?? [:]
        }
        for (fieldName, change) in typed.changes {
            fields[fieldName] = change
        }

        if operation.kind == .create, let live {
            // Retrying a create is safe: the same type and fields answer the stored record.
            if live.recordType == recordType, Self.sameContent(live.fields, fields) {
                return .success(.unchanged(live, operation.desiredKeys))
            }
            return fail(.exists, "Record \(name) already exists with other content.", server: live)
        }

        if !Record.storedSize(fields, fitsIn: context.maxRecordBytes) {
            return fail(.limitExceeded, "Record \(name) is larger than maxRecordBytes (\(context.maxRecordBytes) bytes of fields); "
                + "store large values as an ASSETID (upload them with assets/upload) and keep the record small.")
        }

        var targets: [String] = []
        for reference in fields.values.flatMap(\.references) where reference.action == .deleteSelf {
            if let zone = reference.zoneName, zone != context.zoneName {
                return fail(.validatingReferenceError, "Record \(name) references \(reference.recordName) in zone \(zone) with DELETE_SELF; such references must stay in the record's zone.")
            }
            if !targets.contains(reference.recordName) { targets.append(reference.recordName) }
        }

        // The schema learns new fields (and types) of this save; later operations see them.
        if typed.isNewType || !typed.newFields.isEmpty {
            var type = schema[recordType] ?? RecordTypeSchema(name: recordType)
            type.fields.merge(typed.newFields) { first, _ in first }
            schema[recordType] = type
            additions[recordType, default: [:]].merge(typed.newFields) { first, _ in first }
        }

        let stamp = RecordStamp(timestamp: context.now, userRecordName: context.userRecordName, deviceID: context.deviceID)
        let record = Record(recordName: name, recordType: recordType, fields: fields, changeTag: "",
                            created: live?.created ?? stamp, modified: stamp, deleted: false, zoneName: context.zoneName)
        return .success(.save(record, operation.desiredKeys, deleteSelfTargets: targets,
                              expiresAt: Self.expiry(record, policy: schema[recordType]?.retention)))
    }

    /// Retention counts from the earlier of the named field and the record's creation.
    package static func expiry(_ record: Record, policy: RetentionPolicy?) -> Int64? {
        guard let policy else { return nil }
        var start = record.created.timestamp
        if let field = policy.field, case .timestamp(let value)? = record.fields[field] {
            start = min(start, value)
        }
        return start + Int64(policy.days) * 86_400_000
    }

    /// Equal content for the create retry: assets compare by checksum and size only.
    static func sameContent(_ lhs: [String: FieldValue], _ rhs: [String: FieldValue]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for (key, value) in lhs {
            guard let other = rhs[key], value.comparable == other.comparable else { return false }
        }
        return true
    }
}

extension FieldValue {
    /// The value with asset receipts and URLs removed.
    var comparable: FieldValue {
        switch self {
        case .asset(let asset): .asset(AssetValue(fileChecksum: asset.fileChecksum, size: asset.size))
        case .list(let type, let values): .list(elementType: type, values.map(\.comparable))
        default: self
        }
    }
}
