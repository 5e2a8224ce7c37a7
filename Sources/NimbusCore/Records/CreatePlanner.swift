import NimbusSupport

/// The common write planned lean: creates only, of record types the schema has, with only
/// fields it has, no nulls, no assets and no `DELETE_SELF` references. Such a request saves every
/// record as `ModifyPlanner` would, and this says so without the planner's per-operation
/// dictionaries, steps and name sets (they were a third of a 100-record create's instructions).
/// Anything else is not this shape: nil, and `ModifyPlanner` decides and words any error
/// (CreatePlannerTests compares the two).
package enum CreatePlanner {
    /// One record to insert: the record as answered (its change tag is the caller's to set),
    /// its fields' wire form and its expiry.
    package struct Created: Sendable {
        package var record: Record
        package var wireFields: [UInt8]
        /// Epoch milliseconds from the type's retention, nil for none.
        package var expiresAt: Int64?
        package var desiredKeys: Set<String>?
    }

    /// The records, in operation order, or nil when the request is not this shape.
    package static func plan(_ operations: [Result<RecordOperation, ItemError>], schema: [String: RecordTypeSchema],
                             context: ModifyPlanner.Context) -> [Created]? {
        let stamp = RecordStamp(timestamp: context.now, userRecordName: context.userRecordName, deviceID: context.deviceID)
        var created: [Created] = []
        created.reserveCapacity(operations.count)
        for entry in operations {
            guard case .success(let operation) = entry, operation.kind == .create, let recordType = operation.recordType,
                  let type = schema[recordType], let fields = typedFields(operation.fields, of: type),
                  Record.storedSize(fields, fitsIn: context.maxRecordBytes) else { return nil }
            let record = Record(recordName: operation.recordName, recordType: recordType, fields: fields, changeTag: "",
                                created: stamp, modified: stamp, deleted: false, zoneName: context.zoneName)
            let serialized = record.withWireFields()
            created.append(Created(record: serialized.record, wireFields: serialized.wireFields,
                                   expiresAt: ModifyPlanner.expiry(record, policy: type.retention), desiredKeys: operation.desiredKeys))
        }
        return created
    }

    /// The records `ModifyPlanner` saves for requests `CreatePlanner` leaves to it (a null
    /// field, a declared type the planner settles), when it saves every one of them as written,
    /// learns nothing and references nothing with `DELETE_SELF`; nil otherwise.
    package static func planByModifyPlanner(_ operations: [Result<RecordOperation, ItemError>], schema: [String: RecordTypeSchema],
                                               context: ModifyPlanner.Context) -> [Created]? {
        created(from: ModifyPlanner(context: context).plan(operations, existing: [:], schema: schema), operations: operations.count)
    }

    /// The records of a plan `ModifyPlanner` made against no existing records, when it saves every
    /// one of the request's `operations` as written, learns nothing and references nothing with
    /// `DELETE_SELF`; nil otherwise (the plan is then handed on: the write strategies do not
    /// plan it again).
    package static func created(from plan: ModifyPlan, operations: Int) -> [Created]? {
        // Every operation saved and written: the planner appends a save's write and its result
        // together, so `writes` and `results` go in step.
        guard plan.schemaAdditions.isEmpty, plan.results.count == operations, plan.writes.count == operations else { return nil }
        var created: [Created] = []
        for (write, result) in zip(plan.writes, plan.results) {
            guard case .save(let record, _, let targets, let expiresAt) = write, targets.isEmpty,
                  case .saved(_, let keys) = result,
                  !record.fields.values.contains(where: { $0.hasAssets }) else { return nil }
            let serialized = record.withWireFields()
            created.append(Created(record: serialized.record, wireFields: serialized.wireFields, expiresAt: expiresAt,
                                                 desiredKeys: keys))
        }
        return created
    }

    /// The fields typed by the schema alone, as `FieldTyper` types them when it finds nothing
    /// to add or refuse; nil at the first field it would treat otherwise.
    private static func typedFields(_ raw: [RawField], of type: RecordTypeSchema) -> [String: FieldValue]? {
        var fields: [String: FieldValue] = [:]
        fields.reserveCapacity(raw.count)
        for field in raw {
            guard !field.value.isNull, let known = type.fields[field.name], known.base != .assetID else { return nil }
            if let declared = field.declaredType {
                guard FieldType(name: declared) == known.wireType else { return nil }
            } else if known.isEncrypted {
                return nil      // refused by FieldTyper: an encrypted value must say ENCRYPTED_BYTES
            }
            guard let value = try? FieldValue.decode(field.value, as: known), !value.hasDeleteSelfReference,
                  FieldTyper.retentionProblem(value, field: field.name, recordName: "", schema: type) == nil,
                  fields.updateValue(value, forKey: field.name) == nil else { return nil }
        }
        return fields
    }
}

extension FieldValue {
    /// Whether the value holds a reference with `DELETE_SELF`.
    var hasDeleteSelfReference: Bool {
        switch self {
        case .reference(let reference): reference.action == .deleteSelf
        case .list(.reference, let values): values.contains { $0.hasDeleteSelfReference }
        default: false
        }
    }
}
