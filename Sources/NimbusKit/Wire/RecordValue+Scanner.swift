import Foundation

/// One field of a record read by `ChangesPageDecoder`: where its value starts and its type; the
/// value is decoded once the record is known to be live and its zone known.
struct RawField {
    // In this order, the struct stays as small as it was without the last three (a page's fields
    // are gathered into an array of these: a larger one cost the plain decode ~8%).
    var type: String?
    /// The position of `value` in the document; nil when the field has none.
    var value: Int?
    /// The field is not an object `{value, type}`.
    var notObject = false
    /// The type is `ENCRYPTED_BYTES` (set by `readType`).
    private(set) var sealedType = false
    /// When the value is a string: whether it has escapes, and where it ends (its closing quote;
    /// 0: not read as a string). Read once while the fields are gathered (`readValue`): a sealed
    /// value's base64 is not scanned again.
    private var stringEscaped = false
    private var stringEnd = 0

    /// Reads the field's `value` at the scanner: where it is, and a string's extent.
    mutating func readValue(_ s: inout JSONScanner) throws {
        let isString = try s.kind() == .string
        value = s.index
        stringEnd = 0
        guard isString else { return try s.skipValue() }
        let token = try s.stringTokenValue()
        (stringEscaped, stringEnd) = (token.escaped, token.range.upperBound)
    }

    /// An `ENCRYPTED_BYTES` field (`{value, type}` with that type).
    var isSealed: Bool { sealedType && !notObject }

    /// Reads the field's `type` at the scanner (nil when it is not a string) and whether it is `ENCRYPTED_BYTES`.
    mutating func readType(_ s: inout JSONScanner) throws {
        guard try s.kind() == .string else {
            try s.skipValue()
            (type, sealedType) = (nil, false)
            return
        }
        let token = try s.stringTokenValue()
        type = try s.decode(token)
        sealedType = s.matches(token, "ENCRYPTED_BYTES")
    }

    /// An `ENCRYPTED_BYTES` field's sealed bytes: nil for a missing or null value; an error when
    /// the value is not base64 (as `decode`).
    func sealedBytes(_ s: JSONScanner) throws -> Data? {
        guard let position = value else { return nil }
        let sealed: Data?
        if stringEnd > 0 {
            sealed = try s.base64(JSONScanner.Token(range: (position + 1) ..< stringEnd, escaped: stringEscaped))
        } else {
            var v = s.at(position)
            if try v.takeNull() { return nil }
            sealed = try v.base64Value()
        }
        guard let sealed else { throw JSON.bad("An ENCRYPTED_BYTES field is not base64") }
        return sealed
    }

    /// The field's value as `RecordValue.fromWire` decodes it: nil for a missing or null value.
    func decode(_ s: inout JSONScanner, zoneID: ZoneID) throws -> RecordValue? {
        if notObject { throw JSON.bad("A field is not an object {value, type}") }
        guard let position = value else { return nil }
        var v = s.at(position)
        if try v.takeNull() { return nil }
        guard let typeName = type else { throw JSON.bad("A field has no type") }
        let fieldType = FieldType(rawValue: typeName)
        if fieldType == .encryptedBytes {
            return try sealedBytes(s).map { .encrypted(EncryptedValue(sealed: $0)) }
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
