import NimbusCore
import NimbusSupport

extension ModifyRecordsRequest {
    /// The common shape read straight into operations, without the JSON tree (building and
    /// freeing it was a third of a 100-record request's CPU):
    ///
    ///     {"zoneID": ..., "atomic": ..., "operations": [{"operationType": "create",
    ///       "record": {"recordName": "n", "recordType": "T", "recordChangeTag": "t",
    ///                  "fields": {"f": {"value": ..., "type": "T"}}}}]}
    ///
    /// with valid names, each operation complete for its kind and each record named once. Any
    /// other key (`desiredKeys`, a record's `zoneID`), any problem an item or the request would
    /// be refused for, and anything that is not JSON make it nil: the tree then decodes the body
    /// and words the error (DirectDecodingTests compares the two).
    static func decodeDirectly(_ bytes: [UInt8], limits: Limits) -> ModifyRecordsRequest? {
        JSONScanner.scan(bytes) { scanner in
            var zoneID: JSONValue?, atomic: JSONValue?, operations: [Result<RecordOperation, ItemError>]?
            var first = true
            try scanner.beginObject()
            while let key = try scanner.nextKey(first: &first, among: Self.bodyKeys) {
                switch key {
                case 0 where zoneID == nil: zoneID = try scanner.value()
                case 1 where atomic == nil: atomic = try scanner.value()
                case 2 where operations == nil: operations = try Self.directOperations(&scanner, limits: limits)
                default: throw NotDirect()
                }
            }
            guard let operations else { throw NotDirect() }
            // The tree's own checks, on the values it would hold.
            var top = JSONObject()
            if let zoneID { top["zoneID"] = zoneID }
            let zoneName = try Wire.zoneName(.object(top))
            var isAtomic = false
            switch atomic {
            case nil, .null?: break
            case .bool(let flag)?: isAtomic = flag
            default: throw NotDirect()
            }
            return ModifyRecordsRequest(zoneName: zoneName, operations: operations, atomic: isAtomic)
        }
    }

    private struct NotDirect: Error {}

    private static let bodyKeys: [StaticString] = ["zoneID", "atomic", "operations"]
    private static let operationKeys: [StaticString] = ["operationType", "record"]
    private static let recordKeys: [StaticString] = ["recordName", "recordType", "recordChangeTag", "fields"]
    private static let fieldKeys: [StaticString] = ["value", "type"]

    private init(zoneName: String, operations: [Result<RecordOperation, ItemError>], atomic: Bool) {
        self.zoneName = zoneName
        self.operations = operations
        self.atomic = atomic
    }

    private static func directOperations(_ scanner: inout JSONScanner, limits: Limits) throws -> [Result<RecordOperation, ItemError>] {
        var operations: [Result<RecordOperation, ItemError>] = []
        var names = Set<String>()
        var first = true
        try scanner.beginArray()
        while try scanner.nextElement(first: &first) {
            let operation = try directOperation(&scanner)
            guard operations.count < limits.maxOperationsPerRequest, names.insert(operation.recordName).inserted else { throw NotDirect() }
            operations.append(.success(operation))
        }
        return operations
    }

    private static func directOperation(_ scanner: inout JSONScanner) throws -> RecordOperation {
        var kind: RecordOperation.Kind?, record: RecordOperation?
        var first = true
        try scanner.beginObject()
        while let key = try scanner.nextKey(first: &first, among: Self.operationKeys) {
            switch key {
            case 0 where kind == nil:
                guard let parsed = RecordOperation.Kind(rawValue: try scanner.string()) else { throw NotDirect() }
                kind = parsed
            case 1 where record == nil:
                record = try directRecord(&scanner)
            default: throw NotDirect()
            }
        }
        guard let kind, var operation = record, !operation.recordName.isEmpty,
              operation.recordType != nil || !kind.createsMissing,
              operation.changeTag != nil || !kind.checksTag,
              operation.fields.isEmpty || !kind.isDelete else { throw NotDirect() }
        operation.kind = kind
        return operation
    }

    /// The record object; `kind` is set by the caller.
    private static func directRecord(_ scanner: inout JSONScanner) throws -> RecordOperation {
        var operation = RecordOperation(kind: .create, recordName: "")
        var seen = [false, false, false, false]
        var first = true
        try scanner.beginObject()
        while let key = try scanner.nextKey(first: &first, among: Self.recordKeys) {
            guard !seen[key] else { throw NotDirect() }
            seen[key] = true
            switch key {
            case 0:
                operation.recordName = try scanner.string()
                guard Names.isValidRecordName(operation.recordName) else { throw NotDirect() }
            case 1:
                let type = try scanner.string()
                guard Names.isValidRecordType(type) else { throw NotDirect() }
                operation.recordType = type
            case 2:
                operation.changeTag = try scanner.string()
            case 3:
                operation.fields = try directFields(&scanner)
            default: throw NotDirect()
            }
        }
        return operation
    }

    private static func directFields(_ scanner: inout JSONScanner) throws -> [RawField] {
        var fields: [RawField] = []
        fields.reserveCapacity(16)      // not grown through 1, 2, 4, 8 for a record of ten fields
        var first = true
        try scanner.beginObject()
        while let name = try scanner.nextKey(first: &first) {
            // Names of other lengths differ: most pairs are told apart without comparing strings.
            let length = name.utf8.count
            guard Names.isValidFieldName(name), !fields.contains(where: { $0.name.utf8.count == length && $0.name == name }) else {
                throw NotDirect()
            }
            var value: JSONValue?, type: String?
            var firstMember = true
            try scanner.beginObject()
            while let key = try scanner.nextKey(first: &firstMember, among: Self.fieldKeys) {
                switch key {
                case 0 where value == nil: value = try scanner.value()
                case 1 where type == nil:
                    // A type's name is one of a few: the shared string, not a new one.
                    if let known = scanner.string(among: FieldType.spellings) {
                        type = FieldType.names[known]
                    } else {
                        type = try scanner.string()
                    }
                default: throw NotDirect()
                }
            }
            guard let value else { throw NotDirect() }
            fields.append(RawField(name: name, value: value, declaredType: type))
        }
        return fields
    }
}
