import NimbusSupport
/// Types the fields of an operation against the container's schema (docs/api.md Schema and Details):
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
        func missing(_ field: String?, _ reason: String) -> Result<Typed, ItemError> {
            var error = ItemError(.badRequest, reason, recordName: recordName)
            error.missingInProduction = (recordType, field)
            return .failure(error)
        }
        var typed = Typed()
        typed.changes.reserveCapacity(fields.count)   // not grown (and rehashed) a field at a time
        if schema == nil {
            guard environment == .development else {
                return missing(nil, "Record type \(recordType) is not deployed to production.")
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
                if let known, known.wireType != declared {
                    return fail(Self.mismatch(field.name, recordName: recordName, recordType: recordType, known: known, sent: declared.name))
                }
                fieldType = declared
            } else if let known, known.isEncrypted {
                // The type must be given: a value sent without it is not known to be ciphertext.
                return fail(Self.mismatch(field.name, recordName: recordName, recordType: recordType, known: known, sent: nil))
            } else if let known {
                fieldType = known
            } else {
                guard environment == .development else {
                    return missing(field.name, "Field \(field.name) of \(recordType) is not deployed to production.")
                }
                if FieldTyper.isWholeNumberBeyond64Bits(field.value) {
                    return fail("Field \(field.name) of record \(recordName) has no type and a whole number outside 64 bits "
                        + "(INT64 holds ±9223372036854775807); send it with \"type\": \"DOUBLE\", or as a STRING.")
                }
                guard let inferred = FieldValue.inferType(field.value) else {
                    return fail("Field \(field.name) of record \(recordName) has no type and its value (\(field.value.kindDescription)) does not say one; send \"type\".")
                }
                fieldType = inferred
            }
            if known == nil {
                guard environment == .development else {
                    return missing(field.name, "Field \(field.name) of \(recordType) is not deployed to production.")
                }
                typed.newFields[field.name] = fieldType
            }
            if fieldType.base == .assetID, assetCheck == nil {
                return fail("Field \(field.name) of record \(recordName) is an ASSETID; asset uploads are not available here.")
            }
            switch Result(catching: { () throws(FieldValueError) -> FieldValue in try FieldValue.decode(field.value, as: fieldType) }) {
            case .success(let value):
                if let problem = FieldTyper.retentionProblem(value, field: field.name, recordName: recordName, schema: schema) {
                    return fail(problem)
                }
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

    /// Why a value does not fit its field's type; encrypted fields and the `ENCRYPTED_BYTES` values
    /// of plain ones get their own words (docs/api.md "Encrypted fields"). `sent`: nil for no type.
    static func mismatch(_ field: String, recordName: String, recordType: String, known: FieldType, sent: String?) -> String {
        let prefix = "Field \(field) of record \(recordName)"
        if known.isEncrypted {
            return "\(prefix) is encrypted in the schema of \(recordType) (\(known.schemaName)), but the value was sent "
                + (sent.map { "as \($0)" } ?? "without a type") + "; send the ciphertext as {\"value\": \"<base64>\", \"type\": \"ENCRYPTED_BYTES\"}."
        }
        if sent == FieldType.encryptedBytesName {
            return "\(prefix) is \(known.name) in the schema of \(recordType), not encrypted, but the value was sent as ENCRYPTED_BYTES; "
                + "a field cannot change between plain and encrypted."
        }
        return "\(prefix) is \(known.name) in the schema of \(recordType), but the value was sent as \(sent ?? "no type")."
    }

    /// An untyped number written as an integer too large for `Int64` (a `UInt64` id, say) reaches
    /// here as a whole double of magnitude ≥ 2⁶³: typing it DOUBLE would silently round it (docs/api.md:
    /// refused). The parser keeps no lexeme, so the rule covers whole numbers of up to 20 digits
    /// however written; larger ones (1e300) are plainly doubles and stay DOUBLE.
    static func isWholeNumberBeyond64Bits(_ json: JSONValue) -> Bool {
        switch json {
        case .double(let number):
            return number == number.rounded() && abs(number) >= 9.223372036854775807e18 && abs(number) <= 1e20
        case .array(let elements): return elements.contains(where: isWholeNumberBeyond64Bits)
        default: return false
        }
    }

    /// TIMESTAMPs before 2001 in a type's retention field look like seconds, which would be pruned
    /// at the next run (docs/api.md, "Ambiguous input is refused").
    static let earliestRetentionTimestamp: Int64 = 978_307_200_000  // 2001-01-01T00:00:00Z

    static func retentionProblem(_ value: FieldValue, field: String, recordName: String, schema: RecordTypeSchema?) -> String? {
        guard let retention = schema?.retention, retention.field == field, case .timestamp(let milliseconds) = value,
              milliseconds < earliestRetentionTimestamp else { return nil }
        return "Field \(field) of record \(recordName) is the retention field of \(schema?.name ?? "its type") and holds \(milliseconds), "
            + "before 2001-01-01: TIMESTAMP values are milliseconds since 1970 (a value in seconds would be pruned at once)."
    }
}
