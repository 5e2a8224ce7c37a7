import NimbusSupport

/// The server's side of a record's wire JSON: its fields object, from `FieldValue`s (the
/// envelope around it, `RecordWire`, and each value's form, `FieldWire`, are NimbusWire's).
extension RecordWire {
    /// The `fields` object: `{"name":{"value":V,"type":"T"},...}` in name order, only the
    /// `desiredKeys` among them when given. Every piece is a `memcpy`, and the fields are sorted
    /// by their dictionary positions, not copied out of it.
    package static func writeFields(_ fields: [String: FieldValue], desiredKeys: Set<String>? = nil, to writer: inout JSONPageWriter) {
        var order = Array(fields.indices)
        if let desiredKeys { order.removeAll { !desiredKeys.contains(fields[$0].key) } }
        order.sort { fields[$0].key < fields[$1].key }
        writer.append("{")
        for (position, index) in order.enumerated() {
            let (name, value) = fields[index]
            if position > 0 { writer.append(",") }
            writer.write(name)
            writer.append(FieldWire.entryStart)
            value.writeJSON(to: &writer)
            writer.append(FieldWire.typeMember)
            writer.append(value.type.quotedName)
            writer.append(FieldWire.entryEnd)
        }
        writer.append("}")
    }
}

extension Record {
    /// The fields object as `RecordWire.writeFields` writes it (the wire form, stored beside
    /// the jsonb column and sent as it is).
    package static func wireFields(_ fields: [String: FieldValue], desiredKeys: Set<String>? = nil) -> [UInt8] {
        var writer = JSONPageWriter(capacity: 64 + fields.count * 48)
        RecordWire.writeFields(fields, desiredKeys: desiredKeys, to: &writer)
        return writer.finish()
    }

    /// Writes the record through `RecordWire`: a deleted record as its tombstone. Without
    /// `desiredKeys` and without assets the fields' wire form is the one kept since it was
    /// written (`withWireFields`); `downloadURL` fills in each asset's URL for an answer.
    package func writeJSON(desiredKeys: Set<String>? = nil, downloadURL: ((AssetValue) -> String)? = nil,
                           to writer: inout JSONPageWriter) {
        if deleted {
            RecordWire.writeTombstone(name: recordName, type: recordType, to: &writer)
            return
        }
        let fieldBytes: [UInt8]
        if let downloadURL, fields.values.contains(where: { $0.hasAssets }) {
            fieldBytes = Self.wireFields(withDownloadURLs(downloadURL).fields, desiredKeys: desiredKeys)
        } else if let desiredKeys {
            fieldBytes = Self.wireFields(fields, desiredKeys: desiredKeys)
        } else {
            fieldBytes = serializedFields ?? Self.wireFields(fields)
        }
        fieldBytes.withUnsafeBytes { fields in
            RecordWire.writeRecord(name: recordName, type: recordType, tag: .text(changeTag), fields: fields,
                                   created: (created.timestamp, created.userRecordName, created.deviceID),
                                   modified: (modified.timestamp, modified.userRecordName, modified.deviceID),
                                   zoneName: zoneName, to: &writer)
        }
    }

    /// `writeJSON(to:)` appended to `bytes` (the export's lines).
    package func writeJSON(to bytes: inout [UInt8]) {
        var writer = JSONPageWriter(capacity: 512)
        writeJSON(to: &writer)
        writer.withBytes { bytes.append(contentsOf: $0) }
    }
}
