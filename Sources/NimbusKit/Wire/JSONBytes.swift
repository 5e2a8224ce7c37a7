import Foundation
import NimbusWire

/// Writes JSON straight to bytes for the shapes the client sends most (`records/modify`), through
/// the server's writer (NimbusWire's `JSONWriter`: its escapes and number forms): several times
/// cheaper than building a tree first.
struct JSONBytes {
    /// The writer underneath, for NimbusWire's record and field writers (`RecordWire`, `FieldWire`).
    var writer: JSONWriter

    init(capacity: Int = 1024) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(capacity)
        writer = JSONWriter(bytes: bytes, sortedKeys: false)
    }

    var bytes: [UInt8] { writer.bytes }
    var data: Data { Data(writer.bytes) }

    mutating func raw(_ text: StaticString) { writer.append(text) }

    mutating func byte(_ value: UInt8) {
        withUnsafeBytes(of: value) { writer.appendJSON($0) }
    }

    /// `"key":`
    mutating func key(_ name: String) {
        writer.write(name)
        writer.append(":")
    }

    mutating func string(_ value: String) { writer.write(value) }

    mutating func number(_ value: Int64) { writer.write(value) }

    /// A finite double; others are refused (JSON has no NaN or infinity).
    mutating func number(_ value: Double) throws {
        guard value.isFinite else {
            throw NimbusError(.invalidArguments, reason: "A DOUBLE field is \(value); only finite numbers can be stored.")
        }
        writer.write(value)
    }
}

extension RecordValue {
    /// `{"value":…,"type":"…"}`, each type's value as NimbusWire's `FieldWire` writes it.
    func write(to json: inout JSONBytes) throws {
        json.raw(FieldWire.entryStart)
        try writeValue(to: &json)
        json.raw(FieldWire.typeMember)
        let type = fieldType
        if let wire = type.wire { json.raw(wire.quotedName) } else { json.string(type.rawValue) }
        json.raw(FieldWire.entryEnd)
    }

    private func writeValue(to json: inout JSONBytes) throws {
        switch self {
        case .string(let v): json.string(v)
        case .int64(let v): json.number(v)
        case .double(let v): try json.number(v)
        case .date(let v): FieldWire.writeTimestamp(milliseconds: WireTime.milliseconds(v), to: &json.writer)
        case .bytes(let v): v.withUnsafeBytes { FieldWire.writeBytes($0, to: &json.writer) }
        case .reference(let v):
            FieldWire.writeReference(recordName: v.recordID.recordName, zoneName: v.recordID.zoneID.zoneName,
                                     action: v.action.wire, to: &json.writer)
        case .asset(let v):
            FieldWire.writeAsset(fileChecksum: v.fileChecksum, size: v.size, receipt: v.receipt, downloadURL: nil, to: &json.writer)
        case .list(let values, _):
            json.raw(FieldWire.listStart)
            for (index, value) in values.enumerated() {
                if index > 0 { json.raw(FieldWire.listSeparator) }
                try value.writeValue(to: &json)
            }
            json.raw(FieldWire.listEnd)
        case .encrypted(let v): (v.ciphertext ?? Data()).withUnsafeBytes { FieldWire.writeBytes($0, to: &json.writer) }
        }
    }
}

extension RecordOperation {
    /// The wire operation as `wireOperation()` builds it, written straight to bytes; the record
    /// through NimbusWire's `RecordWire.writeRequestRecord`.
    func write(to json: inout JSONBytes) throws {
        json.raw("{\"operationType\":")
        json.string(kind.rawValue)
        json.raw(",\"record\":")
        RecordWire.writeRequestRecord(name: recordID.recordName, zoneName: recordID.zoneID.zoneName, type: record?.recordType,
                                      changeTag: record != nil ? record?.changeTag : changeTag, to: &json.writer)
        if let record {
            json.raw(RecordWire.fieldsMember)
            json.byte(UInt8(ascii: "{"))
            let onlyChanged = (kind == .update || kind == .forceUpdate) && record.existsOnServer
            for (index, key) in (onlyChanged ? record.changedKeys : Array(record.fields.keys)).enumerated() {
                if index > 0 { json.byte(UInt8(ascii: ",")) }
                json.string(key)
                if let value = record.fields[key] { try value.write(to: &json) } else { json.raw(FieldWire.removal) }
            }
            json.byte(UInt8(ascii: "}"))
        }
        json.raw("}}")
    }
}
