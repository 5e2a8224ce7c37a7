import Foundation
import NimbusKitCK

/// What the plan leaves out: a SessionConfiguration as a record and back. The whole value travels
/// as JSON in `payload`; `name` and `modifiedAt` are fields of their own (queries, conflicts).
extension SessionConfiguration {
    static let recordType = "SessionConfiguration"

    static func from(record: CKRecord) throws -> SessionConfiguration { try from(fields: record.record.fields) }

    static func from(fields: [String: RecordValue]) throws -> SessionConfiguration {
        guard let payload = fields["payload"]?.bytesValue else { throw CKError(.invalidArguments) }
        return try JSONDecoder().decode(SessionConfiguration.self, from: payload)
    }

    var recordID: RecordID { RecordID(recordName: id.uuidString) }

    /// These fields over `record` (a new record when there is none).
    func fill(_ record: Record?) throws -> Record {
        var record = record ?? Record(recordType: SessionConfiguration.recordType, id: recordID)
        record.fields["payload"] = .bytes(try JSONEncoder().encode(self))
        record.fields["name"] = .string(name)
        record.fields["modifiedAt"] = .date(modifiedAt)
        return record
    }

    /// A copy with one setting changed and `modifiedAt` now (the model's properties are `let`).
    func editing(_ key: String, _ value: String) throws -> SessionConfiguration {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        guard var object = try JSONSerialization.jsonObject(with: encoder.encode(self)) as? [String: Any] else { return self }
        switch key {
        case "name": object["name"] = value
        case "duration": object["duration"] = Double(value) ?? duration
        case "block-website": object["blockedWebsites"] = blockedWebsites + [value]
        default: throw CKError(.invalidArguments, userInfo: [NSLocalizedDescriptionKey: "edit name|duration|block-website"])
        }
        object["modifiedAt"] = Date().timeIntervalSince1970 * 1000
        return try decoder.decode(SessionConfiguration.self, from: JSONSerialization.data(withJSONObject: object))
    }
}
