import Foundation
import NimbusWire

/// Writes JSON straight to bytes for the shapes the client sends most (`records/modify`), through
/// the server's writer (NimbusWire's `JSONWriter`: its escapes and number forms): several times
/// cheaper than building a tree first.
struct JSONBytes {
    private var writer: JSONWriter

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
    /// `{"value":…,"type":"…"}`
    func write(to json: inout JSONBytes) throws {
        json.raw("{\"value\":")
        try writeValue(to: &json)
        json.raw(",\"type\":")
        json.string(fieldType.rawValue)
        json.byte(UInt8(ascii: "}"))
    }

    private func writeValue(to json: inout JSONBytes) throws {
        switch self {
        case .string(let v): json.string(v)
        case .int64(let v): json.number(v)
        case .double(let v): try json.number(v)
        case .date(let v): json.number(WireTime.milliseconds(v))
        case .bytes(let v): json.string(v.base64EncodedString())
        case .reference(let v):
            json.raw("{\"recordName\":")
            json.string(v.recordID.recordName)
            json.raw(",\"zoneID\":{\"zoneName\":")
            json.string(v.recordID.zoneID.zoneName)
            json.raw("},\"action\":")
            json.string(v.action.rawValue)
            json.byte(UInt8(ascii: "}"))
        case .asset(let v):
            json.byte(UInt8(ascii: "{"))
            var first = true
            func member(_ name: StaticString) {
                if !first { json.byte(UInt8(ascii: ",")) }
                first = false
                json.raw(name)
            }
            if let c = v.fileChecksum { member("\"fileChecksum\":"); json.string(c) }
            if let s = v.size { member("\"size\":"); json.number(s) }
            if let r = v.receipt { member("\"receipt\":"); json.string(r) }
            json.byte(UInt8(ascii: "}"))
        case .list(let values, _):
            json.byte(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { json.byte(UInt8(ascii: ",")) }
                try value.writeValue(to: &json)
            }
            json.byte(UInt8(ascii: "]"))
        case .encrypted(let v): json.string((v.ciphertext ?? Data()).base64EncodedString())
        }
    }
}

extension RecordOperation {
    /// The wire operation as `wireOperation()` builds it, written straight to bytes.
    func write(to json: inout JSONBytes) throws {
        json.raw("{\"operationType\":")
        json.string(kind.rawValue)
        json.raw(",\"record\":{\"recordName\":")
        json.string(recordID.recordName)
        json.raw(",\"zoneID\":{\"zoneName\":")
        json.string(recordID.zoneID.zoneName)
        json.byte(UInt8(ascii: "}"))
        if let record {
            json.raw(",\"recordType\":")
            json.string(record.recordType)
            if let tag = record.changeTag {
                json.raw(",\"recordChangeTag\":")
                json.string(tag)
            }
            json.raw(",\"fields\":{")
            let onlyChanged = (kind == .update || kind == .forceUpdate) && record.existsOnServer
            for (index, key) in (onlyChanged ? record.changedKeys : Array(record.fields.keys)).enumerated() {
                if index > 0 { json.byte(UInt8(ascii: ",")) }
                json.key(key)
                if let value = record.fields[key] { try value.write(to: &json) } else { json.raw("{\"value\":null}") }
            }
            json.byte(UInt8(ascii: "}"))
        } else if let changeTag {
            json.raw(",\"recordChangeTag\":")
            json.string(changeTag)
        }
        json.raw("}}")
    }
}
