import Foundation
import NimbusCore
import NimbusSupport

/// `records/modify`: the zone, each operation parsed (or why not), and whether all must succeed.
/// The body is read by `ModifyBody` (NimbusCore), straight from its bytes, whatever its shape.
struct ModifyRecordsRequest: DatabaseRequest {
    var zoneName: String
    /// In request order; an operation that cannot be parsed fails alone (unless `atomic`).
    var operations: [Result<RecordOperation, ItemError>]
    var atomic: Bool

    static func decode(_ bytes: [UInt8], limits: Limits) throws -> ModifyRecordsRequest {
        try decode(bytes, limits: limits, newName: { UUID().uuidString })
    }

    /// `newName`: the name of a create sent without one.
    static func decode(_ bytes: [UInt8], limits: Limits, newName: () -> String) throws -> ModifyRecordsRequest {
        let body: ModifyBody
        if let scanned = ModifyBody.scan(bytes, limits: limits) {
            body = scanned
        } else {
            // Not one JSON object: the parser says why (as every endpoint words it); a body of
            // whitespace is an empty object.
            guard case .object(let object) = try RequestInput.parseBody(bytes), object.isEmpty else {
                throw SyncError(.internalError, "records/modify could not read a body the JSON parser accepts.")
            }
            body = ModifyBody()
        }
        let request = try body.request(limits: limits, newName: newName)
        return ModifyRecordsRequest(zoneName: request.zoneName, operations: request.operations, atomic: request.atomic)
    }

    /// The fields each record's answer carries (nil: all), by record name.
    var desiredKeysByName: [String: Set<String>?] {
        Dictionary(operations.compactMap { try? $0.get() }.map { ($0.recordName, $0.desiredKeys) }, uniquingKeysWith: { first, _ in first })
    }
}

/// `records/lookup`: the zone and the names asked for, in order; an invalid name is answered
/// with an error item in its place.
struct LookupRecordsRequest: JSONBodyRequest {
    enum Name: Equatable, Sendable {
        case valid(String)
        case invalid(String)
    }

    var zoneName: String
    var names: [Name]
    var desiredKeys: Set<String>?

    init(body: JSONValue, limits: Limits) throws {
        zoneName = try Wire.zoneName(body)
        let entries = try RequestFields.entries(body, "records", verb: "names",
                                                missing: "records/lookup needs a \"records\" array of {\"recordName\"}.", limits: limits)
        desiredKeys = try RequestFields.desiredKeys(body)
        names = try entries.map { entry in
            guard case .string(let name)? = entry["recordName"] else {
                throw SyncError(.badRequest, "Each element of records must be {\"recordName\": \"...\"}.")
            }
            return Names.isValidRecordName(name) ? .valid(name) : .invalid(name)
        }
    }

    /// The valid names, to look up.
    var validNames: [String] {
        names.compactMap { if case .valid(let name) = $0 { name } else { nil } }
    }
}

/// `records/query`: the zone, and the query once the schema that types its filters is known.
struct QueryRecordsRequest: JSONBodyRequest {
    var zoneName: String
    private let body: JSONValue
    private let limits: Limits

    init(body: JSONValue, limits: Limits) throws {
        zoneName = try Wire.zoneName(body)
        self.body = body
        self.limits = limits
    }

    /// The query; the schema types filter values sent without `type`.
    func query(schema: [String: RecordTypeSchema]) throws -> RecordQuery {
        try RecordQuery.parse(body, schema: schema, limits: limits)
    }
}

/// `records/changes`: a zone's changes after a sync token, optionally waiting for one.
struct RecordChangesRequest: JSONBodyRequest {
    var zoneName: String
    var syncToken: String?
    var resultsLimit: Int
    /// Seconds to wait for a change when there is none (0: answer at once).
    var wait: Int
    var desiredKeys: Set<String>?
    var desiredRecordTypes: Set<String>?

    init(body: JSONValue, limits: Limits) throws {
        zoneName = try Wire.zoneName(body, required: true)
        syncToken = try Wire.syncToken(body)
        resultsLimit = try RecordQuery.resultsLimit(body["resultsLimit"], limits: limits)
        wait = try Wire.waitSeconds(body, limits: limits)
        desiredKeys = try RequestFields.desiredKeys(body)
        if let value = body["desiredRecordTypes"], !value.isNull {
            guard let parsed = RecordOperation.parseDesiredKeys(value), parsed.allSatisfy(Names.isValidRecordType) else {
                throw SyncError(.badRequest, "desiredRecordTypes must be an array of record type names.")
            }
            desiredRecordTypes = parsed
        }
    }
}
