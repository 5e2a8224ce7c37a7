import NimbusCore
import NimbusSupport

/// A stored record as the database hands it over: its text columns as UTF-8 bytes in place.
/// Change feeds send hundreds of records a page; writing each one's wire JSON straight from these
/// bytes costs a fraction of building a `Record` (six strings, a fields dictionary) first.
///
/// The buffers belong to the database result: use a value only while that result is alive.
struct StoredRecordText {
    struct Stamp {
        var timestamp: Int64
        var userRecordName: UnsafeRawBufferPointer
        var deviceID: UnsafeRawBufferPointer

        init(timestamp: Int64, userRecordName: UnsafeRawBufferPointer, deviceID: UnsafeRawBufferPointer) {
            self.timestamp = timestamp
            self.userRecordName = userRecordName
            self.deviceID = deviceID
        }
    }

    var recordName: UnsafeRawBufferPointer
    var recordType: UnsafeRawBufferPointer
    /// The fields in their wire form as they were stored (`Record.storage(of:)`); ignored for a
    /// deleted record.
    var fields: UnsafeRawBufferPointer
    var sequence: Int64
    var created: Stamp
    var modified: Stamp
    var deleted: Bool

    init(recordName: UnsafeRawBufferPointer, recordType: UnsafeRawBufferPointer, fields: UnsafeRawBufferPointer,
                 sequence: Int64, created: Stamp, modified: Stamp, deleted: Bool) {
        self.recordName = recordName
        self.recordType = recordType
        self.fields = fields
        self.sequence = sequence
        self.created = created
        self.modified = modified
        self.deleted = deleted
    }

    /// Writes the record's wire JSON: the bytes `Record.writeJSON(to:)` writes, or those of
    /// `Record.tombstoneJSON` for a deleted record.
    func writeJSON(zoneName: String, to writer: inout JSONPageWriter) {
        writer.append(#"{"recordName":"#)
        writer.write(utf8: recordName)
        writer.append(#","recordType":"#)
        writer.write(utf8: recordType)
        if deleted {
            writer.append(#","deleted":true}"#)
            return
        }
        // ChangeTag.make(sequence:): the sequence in base 36.
        writer.append(#","recordChangeTag":""#)
        writer.writeBase36(sequence)
        writer.append(#"","fields":"#)
        writer.append(raw: fields)
        writer.append(#","created":{"timestamp":"#)
        Self.write(created, to: &writer)
        writer.append(#","modified":{"timestamp":"#)
        Self.write(modified, to: &writer)
        writer.append(#","deleted":false,"zoneID":{"zoneName":"#)
        writer.write(zoneName)
        writer.append("}}")
    }

    private static func write(_ stamp: Stamp, to writer: inout JSONPageWriter) {
        writer.write(stamp.timestamp)
        writer.append(#","userRecordName":"#)
        writer.write(utf8: stamp.userRecordName)
        writer.append(#","deviceID":"#)
        writer.write(utf8: stamp.deviceID)
        writer.append("}")
    }
}
