/// Types the fields of an operation against the container's schema (API.md Schema and Details):
/// declared or schema types are checked, unknown fields are typed from JSON in `development` and
/// refused in `production`.
package struct FieldTyper: Sendable {
    package let environment: Environment

    package init(environment: Environment) {
        self.environment = environment
    }

    /// The typed changes of one operation: a value to set, or nil to remove the field.
    package struct Typed: Sendable, Hashable {
        package var changes: [String: FieldValue?] = [:]
        /// Fields (and the type, when new) the development schema gains by this save.
        package var newFields: [String: FieldType] = [:]
        package var isNewType = false
    }

    package func type(_ fields: [RawField], recordName: String, recordType: String, schema: RecordTypeSchema?) -> Result<Typed, ItemError> {
        func fail(_ reason: String) -> Result<Typed, ItemError> {
            .failure(ItemError(.badRequest, reason, recordName: recordName))
        }
        var typed = Typed()
        if schema == nil {
            guard environment == .development else {
                return fail("Record type \(recordType) is not deployed to production; deploy the development schema with `nimbus schema deploy`.")
            }
            typed.isNewType = true
        }
        for field in fields {
            if field.value.isNull {
                typed.changes[field.name] = .some(nil)
                continue
            }
            let known = schema?.fields[field.name] ?? typed.newFields[field.name]
            var fieldType: FieldType
            if let declaredName = field.declaredType {
                guard let declared = FieldType(name: declaredName) else {
                    return fail("Field \(field.name) of record \(recordName) has unknown type \(Names.quoted(declaredName)).")
                }
                if let known, known != declared {
                    return fail("Field \(field.name) of record \(recordName) is \(known.name) in the schema of \(recordType), but the value was sent as \(declared.name).")
                }
                fieldType = declared
            } else if let known {
                fieldType = known
            } else {
                guard environment == .development else {
                    return fail("Field \(field.name) of \(recordType) is not deployed to production.")
                }
                guard let inferred = FieldValue.inferType(field.value) else {
                    return fail("Field \(field.name) of record \(recordName) has no type and its value (\(field.value.kindDescription)) does not say one; send \"type\".")
                }
                fieldType = inferred
            }
            if known == nil {
                guard environment == .development else {
                    return fail("Field \(field.name) of \(recordType) is not deployed to production.")
                }
                typed.newFields[field.name] = fieldType
            }
            if fieldType.base == .assetID {
                // Asset references need receipts from the assets API, which is not available
                // yet; accepting unverified checksums would let a record point at anything.
                return fail("Field \(field.name) of record \(recordName) is an ASSETID; asset uploads are not available on this server yet.")
            }
            switch Result(catching: { () throws(FieldValueError) -> FieldValue in try FieldValue.decode(field.value, as: fieldType) }) {
            case .success(let value):
                typed.changes[field.name] = value
            case .failure(let error):
                return fail("Field \(field.name) of record \(recordName) expects \(fieldType.name), but the value is \(error.given).")
            }
        }
        return .success(typed)
    }
}
