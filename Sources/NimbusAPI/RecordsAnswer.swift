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
        /// records/lookup: the names asked for, in order, and the store's record for each valid
        /// one (nil: none); an invalid or missing name is answered with an error item.
        case found([RecordChanges.Change?], names: [LookupRecordsRequest.Name])
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

    /// The answer's JSON. Records the store wrote from their rows are copied once, straight into
    /// the answer; everything else is written into one scratch page writer first.
    func bytes(renderer: DatabaseRoutes.RecordRenderer) -> [UInt8] {
        // Records written from rows go straight into the answer's bytes; without them (modify,
        // desiredKeys) everything is written into the page writer, sized for it, and copied once.
        let fromRows = if case .results = records { false } else { desiredKeys == nil }
        var out = Output(bytes: fromRows ? capacity : 0, writer: fromRows ? 1_024 : capacity)
        if case .changes(let zoneName, _, _) = shape {
            out.writer.append(#"{"zoneID":{"zoneName":"#)
            out.writer.write(zoneName)
            out.writer.append(#"},"records":["#)
        } else {
            out.writer.append(#"{"records":["#)
        }
        let downloadURL = renderer.downloadURL
        switch records {
        case .results(let results, let keysByName):
            for (index, result) in results.enumerated() {
                if index > 0 { out.writer.append(byte: UInt8(ascii: ",")) }
                switch result {
                case .saved(let record, let keys):
                    record.writeJSON(desiredKeys: keys, downloadURL: downloadURL, to: &out.writer)
                case .deleted(let name):
                    RecordWire.writeTombstone(name: name, type: nil, to: &out.writer)
                case .failed(let error):
                    Self.write(error, desiredKeys: error.recordName.flatMap { keysByName[$0] ?? nil }, downloadURL: downloadURL, to: &out.writer)
                }
            }
        case .found(let found, let names):
            var records = found.makeIterator(), first = true
            for name in names {
                if !first { out.separate() }
                first = false
                switch name {
                case .invalid(let text):
                    Self.write(ItemError(.badRequest, "Record name \(Names.quoted(text)) is invalid.", recordName: text),
                               desiredKeys: nil, downloadURL: downloadURL, to: &out.writer)
                case .valid(let name):
                    if let record = records.next() ?? nil {
                        write(record, downloadURL: downloadURL, to: &out)
                    } else {
                        Self.write(ItemError(.notFound, "Record \(name) does not exist.", recordName: name),
                                   desiredKeys: nil, downloadURL: downloadURL, to: &out.writer)
                    }
                }
            }
        case .read(let changes):
            for index in changes.indices {
                if index > 0 { out.separate() }
                switch changes[index] {  // written out here, not through write(_:to:): no copy of each change
                case .wireJSON(let json): out.append(json)
                case .record(let record): record.writeJSON(desiredKeys: desiredKeys, downloadURL: downloadURL, to: &out.writer)
                }
            }
        }
        out.writer.append("]")
        switch shape {
        case .records: break
        case .query(let marker):
            if let marker {
                out.writer.append(#","continuationMarker":"#)
                out.writer.write(marker)
            }
        case .changes(_, let token, let moreComing):
            out.writer.append(#","syncToken":"#)
            out.writer.write(token)
            out.writer.append(moreComing ? #","moreComing":true"# : #","moreComing":false"#)
        }
        out.writer.append("}")
        return out.finish()
    }

    /// The answer's bytes, and a page writer for what is not yet bytes. Wire JSON read from rows
    /// goes straight into `bytes`: writing a page of changes into the page writer and then copying
    /// the page out of it cost changes +17 % instructions per record (bench/callgrind.sh); a
    /// modify answer grown from a small page writer cost batch +0.6 %.
    private struct Output: ~Copyable {
        var bytes: [UInt8] = []
        var writer: JSONPageWriter

        init(bytes capacity: Int, writer writerCapacity: Int) {
            bytes.reserveCapacity(capacity)
            writer = JSONPageWriter(capacity: writerCapacity)
        }

        mutating func flush() {
            guard writer.count > 0 else { return }
            writer.withBytes { bytes.append(contentsOf: $0) }
            writer = JSONPageWriter(capacity: 1_024)  // rare: only where written pieces and rows' records alternate
        }

        /// Bytes written already (a record's wire JSON from its row).
        mutating func append(_ json: ArraySlice<UInt8>) {
            flush()
            bytes.append(contentsOf: json)
        }

        /// The `,` between two records.
        mutating func separate() {
            if writer.count > 0 { writer.append(byte: UInt8(ascii: ",")) } else { bytes.append(UInt8(ascii: ",")) }
        }

        consuming func finish() -> [UInt8] {
            flush()
            return bytes
        }
    }

    private func write(_ change: RecordChanges.Change, downloadURL: @escaping (AssetValue) -> String, to out: inout Output) {
        switch change {
        case .wireJSON(let json): out.append(json)
        case .record(let record): record.writeJSON(desiredKeys: desiredKeys, downloadURL: downloadURL, to: &out.writer)
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
        case .found(let found, _):
            64 + found.reduce(0) { size, change in
                if case .wireJSON(let json)? = change { size + json.count + 1 } else { size + 640 }
            }
        case .read(let changes):
            changes.indices.reduce(256) { size, index in
                if case .wireJSON(let json) = changes[index] { size + json.count + 1 } else { size + 640 }
            }
        }
    }
}
