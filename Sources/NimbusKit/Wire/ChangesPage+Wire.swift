import Foundation

/// Decodes a `records/changes` answer straight from its bytes into `ZoneChanges` (issue #28, item
/// 8: a first sync of 100,000 records spent most of its time building and reading
/// `JSONSerialization`'s boxed tree). Accepts and rejects what `Record.fromWire` over the tree does,
/// with the same reasons (`ChangesPageDecoderTests` holds the two equal).
///
/// With a `PageOpening` each sealed (`ENCRYPTED_BYTES`) value is opened where it is met, once its
/// record's zone, type and name are known (issue 30): its base64 decoded from the page's bytes
/// (already found while the fields were gathered), opened and its plaintext decoded to a value,
/// with no sealed-only value built first and no second pass over the page. A record with a value
/// that does not open goes to `unreadable` as `Container.openChanges` puts it there (the two are
/// held equal by `InDecoderOpeningTests`).
enum ChangesPageDecoder {
    static func decode(_ data: Data, zone: ZoneID, opening: PageOpening? = nil) throws -> ZoneChanges {
        try data.withUnsafeBytes { raw in
            var scanner = JSONScanner(raw.bindMemory(to: UInt8.self))
            guard scanner.peek() == UInt8(ascii: "{") else {
                throw JSON.bad("The server's answer is not a JSON object: \(JSON.preview(data))")
            }
            let page = try page(&scanner, zone: zone, opening: opening)
            guard scanner.atEnd() else { throw JSON.bad("The server's answer is not JSON (\(data.count) bytes): \(JSON.preview(data))") }
            return page
        }
    }

    private static func page(_ s: inout JSONScanner, zone: ZoneID, opening: PageOpening?) throws -> ZoneChanges {
        var token: String?
        var moreComing = false
        var modified: [Record] = []
        var deleted: [(id: RecordID, recordType: String?)] = []
        var unreadable: [UnreadableRecord] = []
        var sealed = 0
        var reuse = PageReuse()
        try s.beginObject()
        var first = true
        while let key = try s.nextKey(&first) {
            if s.matches(key, "records") {
                guard try s.kind() == .array else { try s.skipValue(); continue }
                try s.beginArray()
                var firstItem = true
                while try s.nextElement(&firstItem) {
                    guard try s.kind() == .object else { throw JSON.bad("A change is not an object") }
                    switch try change(&s, zone: zone, sealed: &sealed, reuse: &reuse, opening: opening, unreadable: &unreadable) {
                    case .record(let record)?: modified.append(record)
                    case .none: break  // unreadable
                    case .tombstone(let id, let type)?: deleted.append((id, type))
                    }
                }
            } else if s.matches(key, "syncToken") {
                token = try s.stringValue()
            } else if s.matches(key, "moreComing") {
                moreComing = try s.boolValue() ?? false
            } else {
                try s.skipValue()
            }
        }
        guard let token else { throw JSON.bad("records/changes answered without a syncToken") }
        return ZoneChanges(zoneID: zone, modified: modified, deleted: deleted, syncToken: SyncToken(token), moreComing: moreComing,
                           unreadable: unreadable, sealedValues: sealed)
    }

    private enum Change {
        case record(Record)
        case tombstone(RecordID, String?)
    }

    /// What one page's records share while it is decoded: the strings they repeat and the
    /// buffer of a record's raw fields (emptied, its room kept, for the next record).
    private struct PageReuse {
        var recordType = RepeatedString()
        var userRecordName = RepeatedString()
        var deviceID = RepeatedString()
        var rawFields: [(key: String, field: RawField)] = []
    }

    /// One item of `records`: a live record, or a tombstone (`deleted: true`). `sealed` counts
    /// the encrypted values of live records. With `opening`, they are opened here; nil when one
    /// did not open (the record is then appended to `unreadable`).
    private static func change(_ s: inout JSONScanner, zone: ZoneID, sealed: inout Int, reuse: inout PageReuse,
                               opening: PageOpening?, unreadable: inout [UnreadableRecord]) throws -> Change? {
        var name: String?, type: String?, changeTag: String?, zoneName: String?
        var isDeleted = false
        var created: Record.Stamp?, modified: Record.Stamp?
        // The fields' values are decoded once the record's zone is known (references without a
        // zone point into it); until then, where each starts (in `reuse.rawFields`).
        reuse.rawFields.removeAll(keepingCapacity: true)
        var fieldsNotObject = false
        try s.beginObject()
        var first = true
        while let key = try s.nextKey(&first) {
            if s.matches(key, "recordName") {
                name = try s.stringValue()
            } else if s.matches(key, "recordType") {
                type = try s.stringValue(repeating: &reuse.recordType)
            } else if s.matches(key, "recordChangeTag") {
                changeTag = try s.stringValue()
            } else if s.matches(key, "zoneID") {
                zoneName = try zoneNameValue(&s)
            } else if s.matches(key, "deleted") {
                isDeleted = try s.boolValue() == true
            } else if s.matches(key, "fields") {
                if try s.kind() == .object {
                    reuse.rawFields.removeAll(keepingCapacity: true)  // a repeated `fields`: the last one
                    try fields(&s, into: &reuse.rawFields)
                } else {
                    fieldsNotObject = true
                    try s.skipValue()
                }
            } else if s.matches(key, "created") {
                created = try stamp(&s, &reuse)
            } else if s.matches(key, "modified") {
                modified = try stamp(&s, &reuse)
            } else {
                try s.skipValue()
            }
        }
        guard let name else { throw JSON.bad("A record has no recordName") }
        let recordZone = zoneName.map(ZoneID.init) ?? zone
        if isDeleted { return .tombstone(RecordID(recordName: name, zoneID: zone), type) }
        guard let type else { throw JSON.bad("Record \(name) has no recordType") }
        var values: [String: RecordValue] = [:]
        // The first sealed value that did not open; the record's other values are still read (a
        // malformed one fails the page, as without opening).
        var failure: NimbusError?
        if !fieldsNotObject {
            values.reserveCapacity(reuse.rawFields.count)
            for (key, field) in reuse.rawFields {
                if let opening, field.isSealed {
                    try open(field, key, s, opening, zone: recordZone, type: type, name: name, into: &values, sealed: &sealed, failure: &failure)
                    continue
                }
                guard let value = try field.decode(&s, zoneID: recordZone) else { continue }
                if case .encrypted = value { sealed += 1 }
                values[key] = value
            }
        }
        let id = RecordID(recordName: name, zoneID: recordZone)
        if let failure {
            unreadable.append(UnreadableRecord(recordID: id, recordType: type, error: failure))
            return nil
        }
        let record = Record.fromServer(id: id, recordType: type, fields: values, changeTag: changeTag, created: created, modified: modified)
        if let opening, !opening.declared.isEmpty { return .record(opening.finish(record)) }
        return .record(record)
    }

    /// A sealed field of a live record opened into `values`; when it does not open, `failure`
    /// (and nothing more of the record is opened). Kept out of `change` (its plain path ran ~5%
    /// slower with this inside).
    @inline(never)
    private static func open(_ field: RawField, _ key: String, _ s: JSONScanner, _ opening: PageOpening, zone: ZoneID, type: String,
                             name: String, into values: inout [String: RecordValue], sealed: inout Int, failure: inout NimbusError?) throws {
        guard let bytes = try field.sealedBytes(s) else { return }
        sealed += 1
        guard failure == nil else { return }
        do {
            values[key] = try opening.open(bytes, zoneID: zone, recordType: type, recordName: name, field: key)
        } catch {
            failure = error as? NimbusError ?? NimbusError(.decryptionFailed, reason: "\(error)")
        }
    }

    /// `{"zoneName": …}`: the name, or nil.
    static func zoneNameValue(_ s: inout JSONScanner) throws -> String? {
        guard try s.kind() == .object else { try s.skipValue(); return nil }
        var zoneName: String?
        try s.beginObject()
        var first = true
        while let key = try s.nextKey(&first) {
            if s.matches(key, "zoneName") { zoneName = try s.stringValue() } else { try s.skipValue() }
        }
        return zoneName
    }

    /// `created` / `modified`: `{timestamp, userRecordName, deviceID}`; nil without a timestamp.
    private static func stamp(_ s: inout JSONScanner, _ reuse: inout PageReuse) throws -> Record.Stamp? {
        guard try s.kind() == .object else { try s.skipValue(); return nil }
        var ms: Int64?, user: String?, device: String?
        try s.beginObject()
        var first = true
        while let key = try s.nextKey(&first) {
            if s.matches(key, "timestamp") {
                ms = try s.numberValue()?.int64
            } else if s.matches(key, "userRecordName") {
                user = try s.stringValue(repeating: &reuse.userRecordName)
            } else if s.matches(key, "deviceID") {
                device = try s.stringValue(repeating: &reuse.deviceID)
            } else {
                try s.skipValue()
            }
        }
        guard let ms else { return nil }
        return Record.Stamp(timestamp: WireTime.date(milliseconds: ms), userRecordName: user, deviceID: device)
    }

    /// The fields object: each field's name and where its parts are, appended to `out`.
    private static func fields(_ s: inout JSONScanner, into out: inout [(key: String, field: RawField)]) throws {
        try s.beginObject()
        var first = true
        while let key = try s.nextKey(&first) {
            let name = try s.decode(key)
            var field = RawField()
            guard try s.kind() == .object else {
                field.notObject = true  // an error once the record is known to be live
                try s.skipValue()
                out.append((name, field))
                continue
            }
            try s.beginObject()
            var firstPart = true
            while let part = try s.nextKey(&firstPart) {
                if s.matches(part, "value") {
                    try field.readValue(&s)
                } else if s.matches(part, "type") {
                    try field.readType(&s)
                } else {
                    try s.skipValue()
                }
            }
            // A repeated name: the last one wins, as in a dictionary.
            if let existing = out.firstIndex(where: { $0.key == name }) { out.remove(at: existing) }
            out.append((name, field))
        }
    }
}
