import NimbusCore
import NimbusStore
import NimbusSupport
import NimbusHTTP

/// The answer of the four record operations — records/modify, lookup, query and changes — as the
/// handlers return it; `bytes(renderer:)` is the one place that writes it. Every record in it goes
/// out through the one record writer (`RecordWire`): records the store already wrote from their
/// rows (`RecordChanges.Change.wireJSON`) as they are, the others by `Record.writeJSON`.
struct RecordsAnswer: Sendable {
    /// The `records` array.
    enum Records: Sendable {
        /// records/modify: each operation's result in request order, with each record's desiredKeys.
        case results([ModifyResult], desiredKeysByName: [String: Set<String>?])
        /// records/lookup: each requested name's record, or why there is none.
        case found([Result<RecordChanges.Change, ItemError>])
        /// records/query and records/changes: the records read, in order (deleted ones as tombstones).
        case read([RecordChanges.Change])
    }

    /// What surrounds the `records` array.
    enum Shape: Sendable {
        /// `{"records":[...]}` (modify, lookup).
        case records
        /// `{"records":[...],"continuationMarker":...}`, the marker only when there is one.
        case query(continuationMarker: String?)
        /// `{"zoneID":{"zoneName":...},"records":[...],"syncToken":...,"moreComing":...}`.
        case changes(zoneName: String, syncToken: String, moreComing: Bool)
    }

    var records: Records
    /// The fields to send of records read (`.found`, `.read`); nil: all.
    var desiredKeys: Set<String>? = nil
    var shape: Shape = .records

    /// The answer as an HTTP 200.
    func response(renderer: DatabaseRoutes.RecordRenderer) -> HTTPResponse {
        HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: bytes(renderer: renderer))
    }

    /// The answer's JSON.
    func bytes(renderer: DatabaseRoutes.RecordRenderer) -> [UInt8] {
        var writer = JSONPageWriter(capacity: capacity)
        if case .changes(let zoneName, _, _) = shape {
            writer.append(#"{"zoneID":{"zoneName":"#)
            writer.write(zoneName)
            writer.append(#"},"records":["#)
        } else {
            writer.append(#"{"records":["#)
        }
        let downloadURL = renderer.downloadURL
        switch records {
        case .results(let results, let keysByName):
            for (index, result) in results.enumerated() {
                if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                switch result {
                case .saved(let record, let keys):
                    record.writeJSON(desiredKeys: keys, downloadURL: downloadURL, to: &writer)
                case .deleted(let name):
                    RecordWire.writeTombstone(name: name, type: nil, to: &writer)
                case .failed(let error):
                    Self.write(error, desiredKeys: error.recordName.flatMap { keysByName[$0] ?? nil }, downloadURL: downloadURL, to: &writer)
                }
            }
        case .found(let found):
            for (index, entry) in found.enumerated() {
                if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                switch entry {
                case .success(let change): write(change, downloadURL: downloadURL, to: &writer)
                case .failure(let error): Self.write(error, desiredKeys: nil, downloadURL: downloadURL, to: &writer)
                }
            }
        case .read(let changes):
            for (index, change) in changes.enumerated() {
                if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                write(change, downloadURL: downloadURL, to: &writer)
            }
        }
        writer.append("]")
        switch shape {
        case .records: break
        case .query(let marker):
            if let marker {
                writer.append(#","continuationMarker":"#)
                writer.write(marker)
            }
        case .changes(_, let token, let moreComing):
            writer.append(#","syncToken":"#)
            writer.write(token)
            writer.append(moreComing ? #","moreComing":true"# : #","moreComing":false"#)
        }
        writer.append("}")
        return writer.finish()
    }

    private func write(_ change: RecordChanges.Change, downloadURL: @escaping (AssetValue) -> String, to writer: inout JSONPageWriter) {
        switch change {
        case .wireJSON(let json): json.withUnsafeBytes { writer.append(raw: $0) }
        case .record(let record): record.writeJSON(desiredKeys: desiredKeys, downloadURL: downloadURL, to: &writer)
        }
    }

    /// An error item as `Wire.item` words it, with the current record (`serverRecord`, CONFLICT
    /// and EXISTS) written by the record writer as its last member.
    private static func write(_ error: ItemError, desiredKeys: Set<String>?, downloadURL: @escaping (AssetValue) -> String,
                              to writer: inout JSONPageWriter) {
        let item = Wire.item(error).serialized()
        guard let record = error.serverRecord else {
            item.withUnsafeBytes { writer.append(raw: $0) }
            return
        }
        item.dropLast().withUnsafeBytes { writer.append(raw: $0) }  // without its closing brace
        writer.append(#","serverRecord":"#)
        record.writeJSON(desiredKeys: desiredKeys, downloadURL: downloadURL, to: &writer)
        writer.append("}")
    }

    /// Room for the whole answer before the writer first grows: records read as wire JSON by
    /// their size, the others ~640 bytes each (a typical record is under 1 KiB).
    private var capacity: Int {
        switch records {
        case .results(let results, _): 64 + results.count * 640
        case .found(let found): 64 + found.count * 640
        case .read(let changes):
            256 + changes.reduce(0) { size, change in
                if case .wireJSON(let json) = change { size + json.count + 1 } else { size + 640 }
            }
        }
    }
}
