import Foundation

/// One field of a record read by `ChangesPageDecoder`: where its value starts and its type; the
/// value is decoded once the record is known to be live and its zone known.
struct RawField {
    /// The position of `value` in the document; nil when the field has none.
    var value: Int?
    var type: String?
    /// The field is not an object `{value, type}`.
    var notObject = false

    /// The field's value as `RecordValue.fromWire` decodes it: nil for a missing or null value.
    func decode(_ s: inout JSONScanner, zoneID: ZoneID) throws -> RecordValue? {
        if notObject { throw JSON.bad("A field is not an object {value, type}") }
        guard let position = value else { return nil }
        var v = s.at(position)
        if try v.takeNull() { return nil }
        guard let typeName = type else { throw JSON.bad("A field has no type") }
        let fieldType = FieldType(rawValue: typeName)
        if fieldType == .encryptedBytes {
            guard let sealed = try v.base64Value() else {
                throw JSON.bad("An ENCRYPTED_BYTES field is not base64")
            }
            return .encrypted(EncryptedValue(sealed: sealed))
        }
        if fieldType.isList {
            guard try v.kind() == .array else { throw JSON.bad("A \(typeName) field is not a list") }
            let element = fieldType.elementType
            var values: [RecordValue] = []
            try v.beginArray()
            var first = true
            while try v.nextElement(&first) { values.append(try RawField.scalar(&v, type: element, zoneID: zoneID)) }
            return .list(values, elementType: element)
        }
        return try RawField.scalar(&v, type: fieldType, zoneID: zoneID)
    }

    private static func scalar(_ v: inout JSONScanner, type: FieldType, zoneID: ZoneID) throws -> RecordValue {
        switch type {
        case .string:
            if let s = try v.stringValue() { return .string(s) }
        case .int64:
            if let n = try v.numberValue()?.int64 { return .int64(n) }
        case .double:
            if let n = try v.numberValue() { return .double(n.double) }
        case .timestamp:
            if let n = try v.numberValue()?.int64 { return .date(WireTime.date(milliseconds: n)) }
        case .bytes:
            if let data = try v.base64Value() { return .bytes(data) }
        case .reference:
            if let reference = try reference(&v, zoneID: zoneID) { return .reference(reference) }
        case .asset:
            if let asset = try asset(&v) { return .asset(asset) }
        default:
            throw JSON.bad("Unknown field type \(type.rawValue)")
        }
        throw JSON.bad("A \(type.rawValue) field has a value of another kind")
    }

    private static func reference(_ v: inout JSONScanner, zoneID: ZoneID) throws -> Reference? {
        guard try v.kind() == .object else { try v.skipValue(); return nil }
        var name: String?, zoneName: String?, action: String?
        try v.beginObject()
        var first = true
        while let key = try v.nextKey(&first) {
            if v.matches(key, "recordName") {
                name = try v.stringValue()
            } else if v.matches(key, "zoneID") {
                zoneName = try ChangesPageDecoder.zoneNameValue(&v)
            } else if v.matches(key, "action") {
                action = try v.stringValue()
            } else {
                try v.skipValue()
            }
        }
        guard let name else { return nil }
        return Reference(recordID: RecordID(recordName: name, zoneID: zoneName.map(ZoneID.init) ?? zoneID),
                         action: Reference.Action(rawValue: action ?? "NONE") ?? .none)
    }

    private static func asset(_ v: inout JSONScanner) throws -> Asset? {
        guard try v.kind() == .object else { try v.skipValue(); return nil }
        var checksum: String?, size: Int64?, receipt: String?, url: URL?
        try v.beginObject()
        var first = true
        while let key = try v.nextKey(&first) {
            if v.matches(key, "fileChecksum") {
                checksum = try v.stringValue()
            } else if v.matches(key, "size") {
                size = try v.numberValue()?.int64
            } else if v.matches(key, "receipt") {
                receipt = try v.stringValue()
            } else if v.matches(key, "downloadURL") {
                url = try v.stringValue().flatMap(URL.init(string:))
            } else {
                try v.skipValue()
            }
        }
        return Asset(fileChecksum: checksum, size: size, receipt: receipt, downloadURL: url)
    }
}
