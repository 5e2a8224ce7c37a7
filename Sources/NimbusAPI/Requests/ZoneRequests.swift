import NimbusCore
import NimbusSupport
import NimbusStore

/// `zones/lookup`: zone names, in order, as `{"zoneName"}` or `{"zoneID": {"zoneName"}}`.
struct LookupZonesRequest: JSONBodyRequest {
    var names: [String]

    init(body: JSONValue, limits: Limits) throws {
        let entries = try RequestFields.entries(body, "zones", verb: "names", missing: "zones/lookup needs a \"zones\" array of {\"zoneName\"}.",
                                                limits: limits)
        names = try entries.map { entry in
            if case .string(let name)? = entry["zoneName"] { return name }
            if case .string(let name)? = entry["zoneID"]?["zoneName"] { return name }
            throw SyncError(.badRequest, "Each element of zones must be {\"zoneName\": \"...\"}.")
        }
    }
}

/// `zones/modify`: each operation to run, or the reason it is refused (answered in its place).
struct ModifyZonesRequest: JSONBodyRequest {
    enum Entry: Sendable {
        case run(ZoneOperation)
        case refused(zoneName: String, ItemError)
    }

    var entries: [Entry]

    init(body: JSONValue, limits: Limits) throws {
        let entries = try RequestFields.entries(body, "operations", verb: "has", missing: "zones/modify needs an \"operations\" array.",
                                                limits: limits)
        self.entries = entries.map(Self.entry)
    }

    /// The operations to run, in order.
    var operations: [ZoneOperation] {
        entries.compactMap { if case .run(let operation) = $0 { operation } else { nil } }
    }

    private static func entry(_ json: JSONValue) -> Entry {
        let name = json["zone"]?["zoneID"]?["zoneName"]?.stringValue ?? json["zone"]?["zoneName"]?.stringValue ?? ""
        func refused(_ reason: String) -> Entry { .refused(zoneName: name, ItemError(.badRequest, reason)) }
        guard case .string(let kind)? = json["operationType"], kind == "create" || kind == "delete" else {
            return refused("operationType must be create or delete.")
        }
        guard Names.isValidZoneName(name) else {
            return refused("Zone name \(Names.quoted(name)) is invalid: use 1–255 letters, digits, '-', '_', '.', ':'.")
        }
        if name.hasPrefix("_") && name != Names.defaultZone {
            return refused("Zone names starting with '_' are reserved.")
        }
        if kind == "delete" && name == Names.defaultZone {
            return refused("The default zone cannot be deleted.")
        }
        return .run(kind == "create" ? .create(name) : .delete(name))
    }
}

/// `zones/changes`: the zones changed after a sync token, optionally waiting for one.
struct ZoneChangesRequest: JSONBodyRequest {
    var syncToken: String?
    var resultsLimit: Int
    var wait: Int

    init(body: JSONValue, limits: Limits) throws {
        syncToken = try Wire.syncToken(body)
        resultsLimit = try RecordQuery.resultsLimit(body["resultsLimit"], limits: limits)
        wait = try Wire.waitSeconds(body, limits: limits)
    }
}
