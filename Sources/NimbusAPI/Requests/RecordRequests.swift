import Foundation
import NimbusCore
import NimbusSupport

/// `records/modify`: the zone, each operation parsed (or why not), and whether all must succeed.
struct ModifyRecordsRequest: DatabaseRequest {
    var zoneName: String
    /// In request order; an operation that cannot be parsed fails alone (unless `atomic`).
    var operations: [Result<RecordOperation, ItemError>]
    var atomic: Bool

    init(body: JSONValue, limits: Limits) throws {
        zoneName = try Wire.zoneName(body)
        let entries = try RequestFields.entries(body, "operations", verb: "has", missing: "records/modify needs an \"operations\" array.",
                                                limits: limits)
        atomic = false
        if let value = body["atomic"], !value.isNull {
            guard case .bool(let flag) = value else { throw SyncError(.badRequest, "atomic must be true or false.") }
            atomic = flag
        }
        let sharedKeys = try RequestFields.desiredKeys(body)
        operations = []
        var seen = Set<String>()
        for entry in entries {
            var parsed = RecordOperation.parse(entry)
            if case .success(let operation) = parsed, let problem = Self.zoneContradiction(entry, requestZone: zoneName) {
                parsed = .failure(ItemError(.badRequest, problem, recordName: operation.recordName))
            }
            if case .success(var operation) = parsed {
                if operation.recordName.isEmpty { operation.recordName = UUID().uuidString }
                if operation.desiredKeys == nil { operation.desiredKeys = sharedKeys }
                guard seen.insert(operation.recordName).inserted else {
                    throw SyncError(.badRequest, "Record \(operation.recordName) appears in more than one operation; send one operation per record.")
                }
                parsed = .success(operation)
            }
            operations.append(parsed)
        }
    }

    /// The fields each record's answer carries (nil: all), by record name.
    var desiredKeysByName: [String: Set<String>?] {
        Dictionary(operations.compactMap { try? $0.get() }.map { ($0.recordName, $0.desiredKeys) }, uniquingKeysWith: { first, _ in first })
    }

    /// A record's own `zoneID` must name the request's zone (docs/api.md: ambiguous input is refused).
    static func zoneContradiction(_ entry: JSONValue, requestZone: String) -> String? {
        guard let zone = entry["record"]?["zoneID"], !zone.isNull else { return nil }
        guard case .string(let name)? = zone["zoneName"] else {
            return "The record's zoneID must be {\"zoneName\": \"...\"}."
        }
        guard name == requestZone else {
            return "The record names zone \(name), but the request is for zone \(requestZone); send it in a request whose zoneID is \(name)."
        }
        return nil
    }
}

/// `records/lookup`: the zone and the names asked for, in order; an invalid name is answered
/// with an error item in its place.
struct LookupRecordsRequest: DatabaseRequest {
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
struct QueryRecordsRequest: DatabaseRequest {
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
struct RecordChangesRequest: DatabaseRequest {
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
