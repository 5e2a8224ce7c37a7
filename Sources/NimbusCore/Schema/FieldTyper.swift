/// Types the fields of an operation against the container's schema (API.md Schema and Details):
/// declared or schema types are checked, unknown fields are typed from JSON in `development` and
/// refused in `production`.
package struct FieldTyper: Sendable {
    package let environment: Environment
    /// Checks an ASSETID value (its receipt, and that the asset exists); returns why it is
    /// refused, or nil. Without one, asset values are refused.
    package let assetCheck: (@Sendable (AssetValue) -> String?)?

    package init(environment: Environment, assetCheck: (@Sendable (AssetValue) -> String?)? = nil) {
        self.environment = environment
        self.assetCheck = assetCheck
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
            if fieldType.base == .assetID, assetCheck == nil {
                return fail("Field \(field.name) of record \(recordName) is an ASSETID; asset uploads are not available here.")
            }
            switch Result(catching: { () throws(FieldValueError) -> FieldValue in try FieldValue.decode(field.value, as: fieldType) }) {
            case .success(let value):
                if let assetCheck {
                    for asset in value.assets {
                        // A receipt proves the upload happened in this database, with these bytes.
                        if let problem = assetCheck(asset) {
                            return fail("Field \(field.name) of record \(recordName): \(problem)")
                        }
                    }
                }
                typed.changes[field.name] = value.storedForm
            case .failure(let error):
                return fail("Field \(field.name) of record \(recordName) expects \(fieldType.name), but the value is \(error.given).")
            }
        }
        return .success(typed)
    }
}
