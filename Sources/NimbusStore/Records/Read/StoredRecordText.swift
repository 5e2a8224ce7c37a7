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

    /// Writes the record's wire JSON through `RecordWire`, the one writer `Record.writeJSON` uses
    /// too: a deleted record as its tombstone.
    func writeJSON(zoneName: String, to writer: inout JSONPageWriter) {
        if deleted {
            RecordWire.writeTombstone(name: recordName, type: recordType, to: &writer)
            return
        }
        RecordWire.writeRecord(name: recordName, type: recordType, sequence: sequence, fields: fields,
                               created: (created.timestamp, created.userRecordName, created.deviceID),
                               modified: (modified.timestamp, modified.userRecordName, modified.deviceID),
                               zoneName: zoneName, to: &writer)
    }
}
