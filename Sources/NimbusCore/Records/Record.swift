import NimbusSupport
/// Who changed a record and when (docs/api.md `created` / `modified`).
package struct RecordStamp: Sendable, Hashable {
    /// Milliseconds since the Unix epoch.
    package var timestamp: Int64
    package var userRecordName: String
    package var deviceID: String

    package init(timestamp: Int64, userRecordName: String, deviceID: String) {
        self.timestamp = timestamp
        self.userRecordName = userRecordName
        self.deviceID = deviceID
    }
}

/// A record as stored and returned.
package struct Record: Sendable, Hashable {
    package var recordName: String
    package var recordType: String
    package var fields: [String: FieldValue] {
        didSet { serialized = SerializedFields() }
    }
    package var changeTag: String
    package var created: RecordStamp
    package var modified: RecordStamp
    package var deleted: Bool
    package var zoneName: String
    /// The fields' wire form once written (`withWireFields`), so that a saved record is
    /// serialised once: stored as it is and sent as it is.
    private var serialized = SerializedFields()

    package init(recordName: String, recordType: String, fields: [String: FieldValue], changeTag: String,
                 created: RecordStamp, modified: RecordStamp, deleted: Bool = false, zoneName: String) {
        self.recordName = recordName
        self.recordType = recordType
        self.fields = fields
        self.changeTag = changeTag
        self.created = created
        self.modified = modified
        self.deleted = deleted
        self.zoneName = zoneName
    }

    /// The fields' wire form kept since `withWireFields` wrote it (nil once the fields change).
    var serializedFields: [UInt8]? { serialized.bytes }

    /// The record and its fields' wire form (`wireFields(fields)`, written once here), which
    /// `writeJSON` then sends as it is; the form is dropped if the fields change.
    package func withWireFields() -> (record: Record, wireFields: [UInt8]) {
        let bytes = serialized.bytes ?? Self.wireFields(fields)
        var copy = self
        copy.serialized = SerializedFields(bytes: bytes)
        return (copy, bytes)
    }

    /// What the database keeps of `fields`: the JSON for the `fields` column (jsonb), and
    /// whether that text is also the wire form, to be kept beside it and sent as it is. Both are
    /// `wireFields`; it is the wire form unless a value holds an asset: assets are stored without
    /// the download URL each answer adds.
    package static func storage(of fields: [String: FieldValue]) -> (text: String, isWireForm: Bool) {
        (String(decoding: wireFields(fields), as: UTF8.self), !fields.values.contains(where: { $0.hasAssets }))
    }

    package func withDownloadURLs(_ url: (AssetValue) -> String) -> Record {
        var copy = self
        for (name, value) in fields where value.hasAssets {
            copy.fields[name] = value.withDownloadURLs(url)
        }
        return copy
    }

    /// Reads fields back from their stored form (written by `wireFields`, so trusted).
    package static func fields(fromStored json: JSONValue) throws(FieldValueError) -> [String: FieldValue] {
        guard case .object(let object) = json else { throw FieldValueError(given: json.kindDescription) }
        var fields: [String: FieldValue] = [:]
        fields.reserveCapacity(object.count)
        for (name, entry) in object {
            guard case .string(let typeName)? = entry["type"], let type = FieldType(name: typeName), let value = entry["value"] else {
                throw FieldValueError(given: "a stored field without type or value")
            }
            fields[name] = try FieldValue.decode(value, as: type)
        }
        return fields
    }

    /// The size `maxRecordBytes` limits: the fields' stored JSON (assets count by reference only),
    /// where `BYTES` and `ENCRYPTED_BYTES` values count their decoded bytes, not their base64 text
    /// (API.md § Encrypted fields: "as BYTES values do (decoded size)").
    package static func storedSize(_ fields: [String: FieldValue]) -> Int {
        wireFields(fields).count - fields.values.reduce(0) { $0 + base64Excess($1) }
    }

    /// How many more characters a value's base64 text has than the bytes it decodes to.
    private static func base64Excess(_ value: FieldValue) -> Int {
        switch value {
        case .bytes(let bytes): (bytes.count + 2) / 3 * 4 - bytes.count
        case .encrypted(let text): text.utf8.count - Base64Text.decodedCount(text)
        case .list(_, let elements): elements.reduce(0) { $0 + base64Excess($1) }
        default: 0
        }
    }

    /// Whether the stored form of the fields is at most `limit` bytes. Most records are far
    /// below any limit: a bound computed without writing anything settles those, and only the
    /// others are serialized to be measured.
    package static func storedSize(_ fields: [String: FieldValue], fitsIn limit: Int) -> Bool {
        var bound = 2
        for (name, value) in fields {
            bound += JSONBound.string(name) + 48 + JSONBound.value(value)  // 48: `:{"type":"REFERENCE_LIST","value":},`
            if bound > limit { break }
        }
        return bound <= limit || storedSize(fields) <= limit
    }
}

/// A record's fields already serialised: a cache, not part of the record's value (any two are
/// equal), so records compare and hash by what they hold.
private struct SerializedFields: Sendable, Hashable {
    var bytes: [UInt8]?

    static func == (_: SerializedFields, _: SerializedFields) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}

/// Upper bounds of the bytes `JSONWriter` writes for field values.
private enum JSONBound {
    /// Every byte escaped as `\u00XX` at worst, plus the quotes.
    static func string(_ text: String) -> Int { text.utf8.count * 6 + 2 }

    static func value(_ value: FieldValue) -> Int {
        switch value {
        case .string(let text): string(text)
        case .int64, .timestamp: 20
        case .double: 32
        case .bytes(let bytes): bytes.count + 2               // counted decoded (`storedSize`)
        case .encrypted(let text): Base64Text.decodedCount(text) + 2
        // Rare in bulk: measured by writing them.
        case .reference, .asset: Record.storedSize(["": value])
        case .list(_, let elements): elements.reduce(2) { $0 + 1 + Self.value($1) }
        }
    }
}

/// Change tags: the record's change sequence in base 36 — unique within the zone, short, opaque.
package enum ChangeTag {
    package static func make(sequence: Int64) -> String {
        String(sequence, radix: 36)
    }
}
