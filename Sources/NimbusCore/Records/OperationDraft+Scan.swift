import NimbusSupport

extension OperationDraft {
    /// Reads one element of `operations`, whatever its shape: members the rules look at are kept
    /// (a string, object or array read straight from the bytes when it has the expected kind),
    /// any other member is read and dropped. Throws only where the document is not JSON (or names
    /// a key twice in one object, which the parser refuses too).
    package static func read(_ scanner: inout JSONScanner) throws -> OperationDraft {
        var draft = OperationDraft()
        guard scanner.peek() == UInt8(ascii: "{") else {
            _ = try scanner.value()
            draft.isObject = false
            return draft
        }
        var seen = SeenKeys()
        var first = true
        try scanner.beginObject()
        while let key = try scanner.nextMember(first: &first, among: operationKeys) {
            switch try seen.first(key) {
            case 0?:
                if let index = scanner.string(among: kindSpellings) {
                    draft.kind = .value(RecordOperation.Kind.allCases[index])
                } else if case .value(let text) = try stringMember(&scanner) {
                    if let kind = RecordOperation.Kind(rawValue: text) { draft.kind = .value(kind) } else { draft.unknownKind = text }
                }
            case 1?: try readRecord(&scanner, into: &draft)
            case 2?: draft.desiredKeys = try keysMember(&scanner)
            default: _ = try scanner.value()
            }
        }
        return draft
    }

    private static let operationKeys: [StaticString] = ["operationType", "record", "desiredKeys"]
    // Positions in these lists are the cases of the switches below.
    private static let recordKeys = WireKey.spellings([.recordName, .recordType, .recordChangeTag, .fields, .zoneID])
    private static let entryKeys = WireKey.spellings([.value, .type])
    private static let zoneKeys = WireKey.spellings([.zoneName])
    private static let kindSpellings: [StaticString] = ["create", "update", "forceUpdate", "replace", "forceReplace", "delete", "forceDelete"]

    private static func readRecord(_ scanner: inout JSONScanner, into draft: inout OperationDraft) throws {
        guard scanner.peek() == UInt8(ascii: "{") else {
            _ = try scanner.value()
            return
        }
        draft.hasRecord = true
        var seen = SeenKeys()
        var first = true
        try scanner.beginObject()
        while let key = try scanner.nextMember(first: &first, among: recordKeys) {
            switch try seen.first(key) {
            case 0?: draft.recordName = try stringMember(&scanner)
            case 1?: draft.recordType = try stringMember(&scanner)
            case 2?: draft.changeTag = try stringMember(&scanner)
            case 3?: (draft.fields, draft.fieldProblem) = try fieldsMember(&scanner)
            case 4?: draft.zone = try zoneMember(&scanner)
            default: _ = try scanner.value()
            }
        }
    }

    private static func fieldsMember(_ scanner: inout JSONScanner) throws -> (Member<[RawField]>, (field: String, problem: FieldProblem)?) {
        guard scanner.peek() == UInt8(ascii: "{") else { return (try scanner.value().isNull ? .missing : .otherKind, nil) }
        var fields: [RawField] = []
        fields.reserveCapacity(16)      // not grown through 1, 2, 4, 8 for a record of ten fields
        var problem: (field: String, problem: FieldProblem)?
        var first = true
        try scanner.beginObject()
        while let name = try scanner.nextKey(first: &first) {
            // Names of other lengths differ: most pairs are told apart without comparing strings.
            let length = name.utf8.count
            guard !fields.contains(where: { $0.name.utf8.count == length && $0.name == name }) else { throw DuplicateKey() }
            if problem == nil, !Names.isValidFieldName(name) { problem = (name, .invalidName) }
            let (field, fieldProblem) = try entry(&scanner, name: name)
            if problem == nil, let fieldProblem { problem = (name, fieldProblem) }
            fields.append(field)
        }
        return (.value(fields), problem)
    }

    /// A field's entry; the field is kept (with a null value) even when it breaks a rule, so that
    /// a name given twice is still found.
    private static func entry(_ scanner: inout JSONScanner, name: String) throws -> (RawField, FieldProblem?) {
        guard scanner.peek() == UInt8(ascii: "{") else {
            _ = try scanner.value()
            return (RawField(name: name, value: .null), .notObject)
        }
        var value: JSONValue?, type: Member<String> = .missing
        var seen = SeenKeys()
        var first = true
        try scanner.beginObject()
        while let key = try scanner.nextMember(first: &first, among: entryKeys) {
            switch try seen.first(key) {
            case 0?: value = try scanner.value()
            case 1?:
                // A type's name is one of a few: the shared string, not a new one.
                if let known = scanner.string(among: FieldType.spellings) {
                    type = .value(FieldType.names[known])
                } else {
                    type = try stringMember(&scanner)
                }
            default: _ = try scanner.value()
            }
        }
        guard let value else { return (RawField(name: name, value: .null), .noValue) }
        switch type {
        case .value(let declared): return (RawField(name: name, value: value, declaredType: declared), nil)
        case .missing: return (RawField(name: name, value: value), nil)
        case .otherKind: return (RawField(name: name, value: value), .typeNotString)
        }
    }

    private static func zoneMember(_ scanner: inout JSONScanner) throws -> ZoneMember {
        guard scanner.peek() == UInt8(ascii: "{") else { return try scanner.value().isNull ? .missing : .malformed }
        var zone = ZoneMember.malformed
        var seen = SeenKeys()
        var first = true
        try scanner.beginObject()
        while let key = try scanner.nextMember(first: &first, among: zoneKeys) {
            switch try seen.first(key) {
            case 0?: if case .value(let name) = try stringMember(&scanner) { zone = .name(name) }
            default: _ = try scanner.value()
            }
        }
        return zone
    }

    /// A member that should be a string.
    static func stringMember(_ scanner: inout JSONScanner) throws -> Member<String> {
        guard scanner.peek() == UInt8(ascii: "\"") else { return try scanner.value().isNull ? .missing : .otherKind }
        return .value(try scanner.string())
    }

    /// `desiredKeys`: an array of strings (field names).
    package static func keysMember(_ scanner: inout JSONScanner) throws -> Member<Set<String>> {
        guard scanner.peek() == UInt8(ascii: "[") else { return try scanner.value().isNull ? .missing : .otherKind }
        var keys = Set<String>(), allStrings = true
        var first = true
        try scanner.beginArray()
        while try scanner.nextElement(first: &first) {
            if scanner.peek() == UInt8(ascii: "\"") {
                keys.insert(try scanner.string())
            } else {
                _ = try scanner.value()
                allStrings = false
            }
        }
        return allStrings ? .value(keys) : .otherKind
    }
}

/// The same key twice in one object: the document is not JSON the parser accepts.
package struct DuplicateKey: Error {}

/// The keys of one object read so far, to refuse one given twice as the parser does.
package struct SeenKeys {
    private var known: UInt64 = 0
    private var others: [String] = []

    package init() {}

    /// The index of a known key, nil for another key; throws when the object had it already.
    package mutating func first(_ key: JSONScanner.Key) throws -> Int? {
        switch key {
        case .known(let index):
            let bit: UInt64 = 1 << UInt64(index)
            guard known & bit == 0 else { throw DuplicateKey() }
            known |= bit
            return index
        case .other(let name):
            guard !others.contains(name) else { throw DuplicateKey() }
            others.append(name)
            return nil
        }
    }
}
