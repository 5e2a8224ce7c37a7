import Foundation
import NimbusWire

extension Record {
    /// The wire object of a record for `records/modify`: its name, type, change tag and the
    /// given fields (all of them, or only `keys`).
    func wireRecord(keys: [String]? = nil) -> JSONObject {
        var object: JSONObject = [WireKey.recordName.rawValue: .string(id.recordName), WireKey.recordType.rawValue: .string(recordType),
                                  WireKey.zoneID.rawValue: JSON.zoneID(id.zoneID)]
        if let changeTag { object[.recordChangeTag] = .string(changeTag) }
        var wireFields = JSONObject()
        for key in keys ?? Array(fields.keys) {
            if let value = fields[key] {
                wireFields[key] = .object(value.wireJSON())
            } else {
                wireFields[key] = [WireKey.value.rawValue: .null]  // removes the field
            }
        }
        object[.fields] = .object(wireFields)
        return object
    }

    /// Decodes a record object of an answer. A tombstone (`deleted: true`) is `nil`.
    static func fromWire(_ object: JSONObject, zoneID: ZoneID) throws -> Record? {
        guard let name = JSON.string(object[.recordName]) else { throw JSON.bad("A record has no recordName") }
        let zone = JSON.string(JSON.object(object[.zoneID])?[.zoneName]).map(ZoneID.init) ?? zoneID
        if JSON.bool(object[.deleted]) == true { return nil }
        guard let type = JSON.string(object[.recordType]) else { throw JSON.bad("Record \(name) has no recordType") }
        var fields: [String: RecordValue] = [:]
        if let wireFields = JSON.object(object[.fields]) {
            fields.reserveCapacity(wireFields.count)
            for (key, field) in wireFields {
                if let value = try RecordValue.fromWire(field, zoneID: zone) { fields[key] = value }
            }
        }
        return Record.fromServer(id: RecordID(recordName: name, zoneID: zone), recordType: type, fields: fields,
                                 changeTag: JSON.string(object[.recordChangeTag]),
                                 created: stamp(object[.created]), modified: stamp(object[.modified]))
    }

    private static func stamp(_ value: JSONValue?) -> Stamp? {
        guard let object = JSON.object(value), let ms = JSON.int64(object[.timestamp]) else { return nil }
        return Stamp(timestamp: WireTime.date(milliseconds: ms), userRecordName: JSON.string(object[.userRecordName]),
                     deviceID: JSON.string(object[.deviceID]))
    }
}

extension NimbusError {
    /// An error object of an answer (request-level or item), as docs/api.md's error shape.
    static func fromWire(_ object: JSONObject, status: Int, zoneID: ZoneID) -> NimbusError {
        let serverCode = JSON.string(object["serverErrorCode"]) ?? "UNKNOWN"
        let reason = JSON.string(object["reason"]) ?? "The server answered \(serverCode) without a reason."
        // A 408 is about the request's transport (its body stalled or was cut), not its content:
        // the same request sent again can succeed.
        let code = status == 408 ? NimbusError.Code.networkFailure : code(forServerCode: serverCode, status: status)
        var error = NimbusError(code, reason: status == 408 ? "The server stopped waiting for the request: \(reason)" : reason,
                                serverErrorCode: serverCode, retryAfter: JSON.double(object["retryAfter"]),
                                itemName: JSON.string(object[.recordName]) ?? JSON.string(object["subscriptionID"]),
                                httpStatus: status)
        if let server = JSON.object(object["serverRecord"]) {
            error.serverRecord = try? Record.fromWire(server, zoneID: zoneID)
        }
        if error.itemName == nil, let zone = JSON.object(object[.zoneID]) { error.itemName = JSON.string(zone[.zoneName]) }
        return error
    }
}
