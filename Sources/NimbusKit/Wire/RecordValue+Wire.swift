import Foundation
import NimbusWire

extension RecordValue {
    /// The wire form `{"value": …, "type": "…"}` (member names: NimbusWire's `WireKey`).
    func wireJSON() -> JSONObject {
        [WireKey.value.rawValue: wireValue(), WireKey.type.rawValue: .string(fieldType.rawValue)]
    }

    /// The value's JSON (`JSONBytes` writes the same straight to bytes for `records/modify`,
    /// through NimbusWire's `FieldWire`).
    func wireValue() -> JSONValue {
        switch self {
        case .string(let v): return .string(v)
        case .int64(let v): return .integer(v)
        case .double(let v): return .double(v)
        case .date(let v): return .integer(WireTime.milliseconds(v))
        case .bytes(let v): return .string(v.base64EncodedString())
        case .reference(let v):
            return [WireKey.recordName.rawValue: .string(v.recordID.recordName), WireKey.action.rawValue: .string(v.action.rawValue),
                    WireKey.zoneID.rawValue: JSON.zoneID(v.recordID.zoneID)]
        case .asset(let v):
            var object = JSONObject()
            if let c = v.fileChecksum { object[.fileChecksum] = .string(c) }
            if let s = v.size { object[.size] = .integer(s) }
            if let r = v.receipt { object[.receipt] = .string(r) }
            return .object(object)
        case .list(let values, _): return .array(values.map { $0.wireValue() })
        case .encrypted(let v): return .string((v.ciphertext ?? Data()).base64EncodedString())
        }
    }

    /// Decodes a wire field (`{"value", "type"}`); `zoneID` is where references without a zone point.
    static func fromWire(_ field: JSONValue?, zoneID: ZoneID) throws -> RecordValue? {
        guard let object = JSON.object(field) else { throw JSON.bad("A field is not an object {value, type}") }
        return try fromWire(object, zoneID: zoneID)
    }

    static func fromWire(_ object: JSONObject, zoneID: ZoneID) throws -> RecordValue? {
        guard let value = object[.value], !value.isNull else { return nil }
        guard let typeName = JSON.string(object[.type]) else { throw JSON.bad("A field has no type") }
        let type = FieldType(rawValue: typeName)
        if type == .encryptedBytes {
            guard let text = JSON.string(value), let sealed = Data(base64Encoded: text) else { throw JSON.bad("An ENCRYPTED_BYTES field is not base64") }
            return .encrypted(EncryptedValue(sealed: sealed))
        }
        if type.isList {
            guard let items = JSON.array(value) else { throw JSON.bad("A \(typeName) field is not a list") }
            let element = type.elementType
            let values = try items.map { try scalar($0, type: element, zoneID: zoneID) }
            return .list(values, elementType: element)
        }
        return try scalar(value, type: type, zoneID: zoneID)
    }

    private static func scalar(_ value: JSONValue, type: FieldType, zoneID: ZoneID) throws -> RecordValue {
        switch type {
        case .string:
            if let v = JSON.string(value) { return .string(v) }
        case .int64:
            if let v = JSON.int64(value) { return .int64(v) }
        case .double:
            if let v = JSON.double(value) { return .double(v) }
        case .timestamp:
            if let v = JSON.int64(value) { return .date(WireTime.date(milliseconds: v)) }
        case .bytes:
            if let s = JSON.string(value), let data = Data(base64Encoded: s) { return .bytes(data) }
        case .reference:
            if let object = JSON.object(value), let name = JSON.string(object[.recordName]) {
                let zone = JSON.string(JSON.object(object[.zoneID])?[.zoneName]).map(ZoneID.init) ?? zoneID
                let action = Reference.Action(rawValue: JSON.string(object[.action]) ?? "NONE") ?? .none
                return .reference(Reference(recordID: RecordID(recordName: name, zoneID: zone), action: action))
            }
        case .asset:
            if let object = JSON.object(value) {
                let url = JSON.string(object[.downloadURL]).flatMap(URL.init(string:))
                return .asset(Asset(fileChecksum: JSON.string(object[.fileChecksum]), size: JSON.int64(object[.size]),
                                    receipt: JSON.string(object[.receipt]), downloadURL: url))
            }
        default:
            throw JSON.bad("Unknown field type \(type.rawValue)")
        }
        throw JSON.bad("A \(type.rawValue) field has a value of another kind")
    }
}
