/// Text that a record's wire JSON holds as a JSON string: a `String`, or UTF-8 bytes in place
/// (a database row's text, `StoredRecordText`).
package protocol WireText {
    func writeJSONString(to writer: inout JSONPageWriter)
}

extension String: WireText {
    package func writeJSONString(to writer: inout JSONPageWriter) { writer.write(self) }
}

extension UnsafeRawBufferPointer: WireText {
    package func writeJSONString(to writer: inout JSONPageWriter) { writer.write(utf8: self) }
}

/// A record's change tag as it is at hand: its text, or the change sequence it is made of
/// (`ChangeTag.make(sequence:)`: base 36).
package enum WireChangeTag {
    case text(String)
    case sequence(Int64)
}

/// The one writer of a record's wire JSON (API.md § Records) and of its tombstone, into a page
/// writer. Everything that sends or keeps a record goes through it: the records/modify, lookup,
/// query and changes answers (`RecordsAnswer` in NimbusAPI), the stored wire form
/// (`Record.storage(of:)`), change pages written from rows (`StoredRecordText`) and the export.
/// `Record.writeJSON` (NimbusCore) is its entry for a decoded record, `StoredRecordText.writeJSON`
/// for a row, `writeRequestRecord` NimbusKit's for the record of a records/modify operation.
/// In NimbusWire so that both sides spell the envelope here; the fields object is written by
/// each side from its own values through `FieldWire` (`RecordWire.writeFields` in NimbusCore).
/// Member names: `WireKey`.
package enum RecordWire {
    /// `created` / `modified`: who and when.
    private struct Stamp<Text: WireText> {
        var timestamp: Int64
        var userRecordName: Text
        var deviceID: Text

        init(timestamp: Int64, userRecordName: Text, deviceID: Text) {
            self.timestamp = timestamp
            self.userRecordName = userRecordName
            self.deviceID = deviceID
        }
    }

    /// A stamp of a row's text in place: a plain tuple, not a `Stamp`. A generic struct made in
    /// NimbusStore is built through its type metadata, and that cost change pages +11 %
    /// instructions per record (bench/callgrind.sh).
    package typealias RowStamp = (timestamp: Int64, userRecordName: UnsafeRawBufferPointer, deviceID: UnsafeRawBufferPointer)

    /// A live record from a row's text in place: `{"recordName","recordType","recordChangeTag",
    /// "fields","created","modified","deleted":false,"zoneID":{"zoneName"}}`, in that order;
    /// `fields` is the fields object's bytes as `writeFields` wrote them when it was stored, and
    /// the change tag the change sequence in base 36 (`ChangeTag.make(sequence:)`).
    package static func writeRecord(name: UnsafeRawBufferPointer, type: UnsafeRawBufferPointer, sequence: Int64,
                                    fields: UnsafeRawBufferPointer, created: RowStamp, modified: RowStamp, zoneName: String,
                                    to writer: inout JSONPageWriter) {
        write(name: name, type: type, tag: .sequence(sequence), fields: fields,
              created: Stamp(timestamp: created.timestamp, userRecordName: created.userRecordName, deviceID: created.deviceID),
              modified: Stamp(timestamp: modified.timestamp, userRecordName: modified.userRecordName, deviceID: modified.deviceID),
              zoneName: zoneName, to: &writer)
    }

    /// A stamp of a decoded record's strings: a tuple too (built in NimbusCore).
    package typealias TextStamp = (timestamp: Int64, userRecordName: String, deviceID: String)

    /// `writeRecord` of a decoded record's strings (`Record.writeJSON`).
    package static func writeRecord(name: String, type: String, tag: WireChangeTag, fields: UnsafeRawBufferPointer,
                                    created: TextStamp, modified: TextStamp, zoneName: String, to writer: inout JSONPageWriter) {
        write(name: name, type: type, tag: tag, fields: fields,
              created: Stamp(timestamp: created.timestamp, userRecordName: created.userRecordName, deviceID: created.deviceID),
              modified: Stamp(timestamp: modified.timestamp, userRecordName: modified.userRecordName, deviceID: modified.deviceID),
              zoneName: zoneName, to: &writer)
    }

    /// The record of a records/modify operation as NimbusKit sends it, up to its fields:
    /// `{"recordName":N,"zoneID":{"zoneName":Z}[,"recordType":T][,"recordChangeTag":C]` (a
    /// delete has no type); the caller goes on with `fieldsMember` and the fields, and `}`.
    package static func writeRequestRecord(name: String, zoneName: String, type: String?, changeTag: String?,
                                           to writer: inout JSONWriter) {
        writer.append(#"{"recordName":"#)
        writer.write(name)
        writer.append(#","zoneID":{"zoneName":"#)
        writer.write(zoneName)
        writer.append("}")
        if let type {
            writer.append(#","recordType":"#)
            writer.write(type)
        }
        if let changeTag {
            writer.append(#","recordChangeTag":"#)
            writer.write(changeTag)
        }
    }

    /// Before a record's fields object: `,"fields":`.
    package static var fieldsMember: StaticString { #","fields":"# }

    /// A deleted record in change feeds: `{"recordName","recordType","deleted":true}`, from a row's bytes.
    package static func writeTombstone(name: UnsafeRawBufferPointer, type: UnsafeRawBufferPointer, to writer: inout JSONPageWriter) {
        tombstone(name: name, type: type, to: &writer)
    }

    /// A tombstone of a decoded record; without a type, the `{"recordName","deleted":true}` that
    /// answers a records/modify delete.
    package static func writeTombstone(name: String, type: String?, to writer: inout JSONPageWriter) {
        tombstone(name: name, type: type, to: &writer)
    }

    // The layout, once: generic over where the text lies, specialised in this module for the two
    // entries above each (a generic called from NimbusStore would run unspecialised; @inlinable
    // cannot reach the package-level JSONPageWriter).
    private static func write<Text: WireText>(name: Text, type: Text, tag: WireChangeTag, fields: UnsafeRawBufferPointer,
                                                    created: Stamp<Text>, modified: Stamp<Text>, zoneName: String,
                                                    to writer: inout JSONPageWriter) {
        writer.append(#"{"recordName":"#)
        name.writeJSONString(to: &writer)
        writer.append(#","recordType":"#)
        type.writeJSONString(to: &writer)
        switch tag {
        case .text(let text):
            writer.append(#","recordChangeTag":"#)
            writer.write(text)
            writer.append(#","fields":"#)
        case .sequence(let sequence):
            writer.append(#","recordChangeTag":""#)
            writer.writeBase36(sequence)
            writer.append(#"","fields":"#)
        }
        writer.append(raw: fields)
        writer.append(#","created":{"timestamp":"#)
        writeStamp(created, to: &writer)
        writer.append(#","modified":{"timestamp":"#)
        writeStamp(modified, to: &writer)
        writer.append(#","deleted":false,"zoneID":{"zoneName":"#)
        writer.write(zoneName)
        writer.append("}}")
    }

    private static func tombstone<Text: WireText>(name: Text, type: Text?, to writer: inout JSONPageWriter) {
        writer.append(#"{"recordName":"#)
        name.writeJSONString(to: &writer)
        if let type {
            writer.append(#","recordType":"#)
            type.writeJSONString(to: &writer)
        }
        writer.append(#","deleted":true}"#)
    }

    /// A stamp's members after `{"timestamp":` (written with the member's name: one piece fewer).
    private static func writeStamp<Text: WireText>(_ stamp: Stamp<Text>, to writer: inout JSONPageWriter) {
        writer.write(stamp.timestamp)
        writer.append(#","userRecordName":"#)
        stamp.userRecordName.writeJSONString(to: &writer)
        writer.append(#","deviceID":"#)
        stamp.deviceID.writeJSONString(to: &writer)
        writer.append("}")
    }
}
