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

    var json: JSONValue {
        .object(["timestamp": .integer(timestamp), "userRecordName": .string(userRecordName), "deviceID": .string(deviceID)])
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

    /// The record dictionary of docs/api.md; `desiredKeys` limits the fields (nil: all).
    package func json(desiredKeys: Set<String>? = nil) -> JSONValue {
        var fieldsObject = JSONObject()
        for name in fields.keys.sorted() {
            if let desiredKeys, !desiredKeys.contains(name) { continue }
            if let value = fields[name] {
                fieldsObject[name] = .object(["value": value.json, "type": .string(value.type.name)])
            }
        }
        return .object(dictionary(fields: .object(fieldsObject)))
    }

    /// Appends `json().serialized()` to `bytes` without building the tree (a records/modify
    /// answer of 100 records built and walked ~1,500 values).
    package func writeJSON(to bytes: inout [UInt8]) {
        writeJSON(fields: serialized.bytes ?? Self.wireFields(fields), to: &bytes)
    }

    /// The record and its fields' wire form (`wireFields(fields)`, written once here), which
    /// `writeJSON(to:)` then sends as it is; the form is dropped if the fields change.
    package func withWireFields() -> (record: Record, wireFields: [UInt8]) {
        let bytes = serialized.bytes ?? Self.wireFields(fields)
        var copy = self
        copy.serialized = SerializedFields(bytes: bytes)
        return (copy, bytes)
    }

    /// The `fields` object of `json()`, serialized: `{"name":{"value":V,"type":"T"},...}`, in
    /// name order. Written into a page writer: every piece is a `memcpy`, and the fields are
    /// sorted by their dictionary positions, not copied out of it.
    package static func wireFields(_ fields: [String: FieldValue]) -> [UInt8] {
        var order = Array(fields.indices)
        order.sort { fields[$0].key < fields[$1].key }
        var writer = JSONPageWriter(capacity: 64 + fields.count * 48)
        writer.append("{")
        for (position, index) in order.enumerated() {
            let (name, value) = fields[index]
            if position > 0 { writer.append(",") }
            writer.write(name)
            writer.append(#":{"value":"#)
            value.writeJSON(to: &writer)
            writer.append(#","type":"#)
            writer.append(value.type.quotedName)
            writer.append("}")
        }
        writer.append("}")
        return writer.finish()
    }

    /// What the database keeps of `fields`: the JSON for the `fields` column, and whether that
    /// text is also the wire form, to be kept beside it and sent as it is. It is, unless a value
    /// holds an asset: assets are stored without the download URL each answer adds. (Both forms
    /// are the same document to jsonb: the same members, in another order.)
    package static func storage(of fields: [String: FieldValue]) -> (text: String, isWireForm: Bool) {
        if fields.values.contains(where: { $0.hasAssets }) {
            return (storedFields(fields).serializedString, false)
        }
        return (String(decoding: wireFields(fields), as: UTF8.self), true)
    }

    /// Appends the record dictionary of `json()` to `bytes`, with `fields` given as JSON bytes
    /// already in the wire form (change feeds send stored fields as stored), without building
    /// values: the members and their order are those of `json()`.
    package func writeJSON(fields: [UInt8], to bytes: inout [UInt8]) {
        var writer = JSONPageWriter(capacity: fields.count + 256)
        writeJSON(fields: fields, to: &writer)
        writer.withBytes { bytes.append(contentsOf: $0) }
    }

    /// `writeJSON(to:)` into a page writer (a records/modify answer of many records).
    package func writeJSON(to writer: inout JSONPageWriter) {
        writeJSON(fields: serialized.bytes ?? Self.wireFields(fields), to: &writer)
    }

    private func writeJSON(fields: [UInt8], to writer: inout JSONPageWriter) {
        writer.append(#"{"recordName":"#)
        writer.write(recordName)
        writer.append(#","recordType":"#)
        writer.write(recordType)
        writer.append(#","recordChangeTag":"#)
        writer.write(changeTag)
        writer.append(#","fields":"#)
        fields.withUnsafeBytes { writer.append(raw: $0) }
        writer.append(#","created":{"timestamp":"#)
        writeStamp(created, to: &writer)
        writer.append(#","modified":{"timestamp":"#)
        writeStamp(modified, to: &writer)
        writer.append(deleted ? #","deleted":true,"zoneID":{"zoneName":"# : #","deleted":false,"zoneID":{"zoneName":"#)
        writer.write(zoneName)
        writer.append("}}")
    }

    private func writeStamp(_ stamp: RecordStamp, to writer: inout JSONPageWriter) {
        writer.write(stamp.timestamp)
        writer.append(#","userRecordName":"#)
        writer.write(stamp.userRecordName)
        writer.append(#","deviceID":"#)
        writer.write(stamp.deviceID)
        writer.append("}")
    }

    private func dictionary(fields: JSONValue) -> JSONObject {
        var object: JSONObject = [:]
        object["recordName"] = .string(recordName)
        object["recordType"] = .string(recordType)
        object["recordChangeTag"] = .string(changeTag)
        object["fields"] = fields
        object["created"] = created.json
        object["modified"] = modified.json
        object["deleted"] = .bool(deleted)
        object["zoneID"] = .object(["zoneName": .string(zoneName)])
        return object
    }

    package func withDownloadURLs(_ url: (AssetValue) -> String) -> Record {
        var copy = self
        for (name, value) in fields where value.hasAssets {
            copy.fields[name] = value.withDownloadURLs(url)
        }
        return copy
    }

    /// The short form of a deleted record in change feeds: `{"recordName", "recordType", "deleted": true}`.
    package var tombstoneJSON: JSONValue {
        .object(["recordName": .string(recordName), "recordType": .string(recordType), "deleted": .bool(true)])
    }

    /// The stored form of the fields: `{"name": {"type": "...", "value": ...}}`.
    package static func storedFields(_ fields: [String: FieldValue]) -> JSONValue {
        var object = JSONObject()
        for name in fields.keys.sorted() {
            if let value = fields[name] {
                object[name] = .object(["type": .string(value.type.name), "value": value.json])
            }
        }
        return .object(object)
    }

    /// Reads fields back from their stored form (written by `storedFields`, so trusted).
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
        storedFields(fields).serialized().count - fields.values.reduce(0) { $0 + base64Excess($1) }
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
