import NimbusSupport

/// One element of a `records/modify` body's `operations` as read (`OperationDraft+Scan`), before
/// its rules are applied: each member the rules look at, with whether it was absent, null, of
/// the expected JSON kind (and then its value) or of another kind. `validated()` turns it into an
/// operation or the item error that says what to fix — the only place those rules live.
package struct OperationDraft: Sendable {
    /// A member as sent.
    package enum Member<Value: Sendable>: Sendable {
        /// Absent or null: the same to every rule here.
        case missing
        case value(Value)
        /// Present, not null, of another JSON kind.
        case otherKind
    }

    /// Why a field cannot be taken, in the order the rules check a field.
    package enum FieldProblem: Sendable {
        case invalidName, notObject, noValue, typeNotString

        func reason(_ field: String) -> String {
            switch self {
            case .invalidName: "Field name \(Names.quoted(field)) is invalid: use a letter, then letters, digits or '_' (at most 255)."
            case .notObject: "Field \(field) must be an object with \"value\" (and optionally \"type\")."
            case .noValue: "Field \(field) has no \"value\"; send \"value\": null to remove it."
            case .typeNotString: "The type of field \(field) must be a string."
            }
        }
    }

    /// The record's `zoneID`.
    package enum ZoneMember: Sendable {
        case missing
        case name(String)
        /// Not an object with a string `zoneName`.
        case malformed
    }

    /// The element is an object (else nothing below was read).
    package var isObject = true
    /// `operationType`: a known kind, another string, or not a string (`.otherKind`/`.missing`).
    package var kind: Member<RecordOperation.Kind> = .missing
    package var unknownKind: String?
    /// `record` is an object (else its members below stay missing).
    package var hasRecord = false
    package var recordName: Member<String> = .missing
    package var recordType: Member<String> = .missing
    package var changeTag: Member<String> = .missing
    /// The fields in order (taken as they are when `fieldProblem` is nil).
    package var fields: Member<[RawField]> = .missing
    /// The first field, in order, that breaks a rule.
    package var fieldProblem: (field: String, problem: FieldProblem)?
    package var zone: ZoneMember = .missing
    package var desiredKeys: Member<Set<String>> = .missing

    package init() {}

    /// The operation, or why not, checked in this order: the first problem found is the one
    /// reported. A create without a name keeps an empty one (the request names it). `zone`: the
    /// request's zone, which the record's own `zoneID` (when sent) must name.
    package func validated(zone requestZone: String) -> Result<RecordOperation, ItemError> {
        func fail(_ reason: String, _ name: String? = nil) -> Result<RecordOperation, ItemError> {
            .failure(ItemError(.badRequest, reason, recordName: name))
        }
        guard isObject else { return fail("An operation must be an object.") }
        var name: String?
        if case .value(let text) = recordName { name = text }
        guard case .value(let kind) = kind else {
            if let unknownKind {
                return fail("Unknown operationType \(Names.quoted(unknownKind)); use one of \(RecordOperation.Kind.allCases.map(\.rawValue).joined(separator: ", ")).", name)
            }
            return fail("The operation has no operationType.", name)
        }
        guard hasRecord else { return fail("The operation has no record object.", name) }
        var operation = RecordOperation(kind: kind, recordName: name ?? "")
        if case .otherKind = recordName { return fail("recordName must be a string.") }
        if operation.recordName.isEmpty {
            guard kind == .create else { return fail("\(kind.rawValue) needs a recordName.") }
        } else if !Names.isValidRecordName(operation.recordName) {
            return fail("Record name \(Names.quoted(operation.recordName)) is invalid: use 1–255 letters, digits, '-', '_', '.', ':'.", name)
        }
        switch recordType {
        case .value(let type) where Names.isValidRecordType(type): operation.recordType = type
        case .value, .otherKind: return fail("recordType must be a name starting with a letter, then letters, digits or '_'.", name)
        case .missing: if kind.createsMissing { return fail("\(kind.rawValue) needs a recordType.", name) }
        }
        switch changeTag {
        case .value(let tag): operation.changeTag = tag
        case .otherKind: return fail("recordChangeTag must be a string.", name)
        case .missing: break
        }
        if kind.checksTag, operation.changeTag == nil {
            return fail("\(kind.rawValue) needs the record's current recordChangeTag.", name)
        }
        if !kind.isDelete {
            switch fields {
            case .otherKind: return fail("fields must be an object.", name)
            case .missing: break
            case .value(let list):
                if let (field, problem) = fieldProblem { return fail(problem.reason(field), name) }
                operation.fields = list
            }
        }
        switch desiredKeys {
        case .value(let keys): operation.desiredKeys = keys
        case .otherKind: return fail("desiredKeys must be an array of field names.", name)
        case .missing: break
        }
        switch zone {
        case .missing: break
        case .malformed:
            return .failure(ItemError(.badRequest, "The record's zoneID must be {\"zoneName\": \"...\"}.", recordName: operation.recordName))
        case .name(let zoneName) where zoneName != requestZone:
            return .failure(ItemError(.badRequest, "The record names zone \(zoneName), but the request is for zone \(requestZone); "
                + "send it in a request whose zoneID is \(zoneName).", recordName: operation.recordName))
        case .name: break
        }
        return .success(operation)
    }
}
