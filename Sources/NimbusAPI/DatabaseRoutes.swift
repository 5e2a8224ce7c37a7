import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// `/database/1/{container}/{environment}/{database}/{group}/{operation}`: one route per
/// operation. Each checks the address and the bearer token, parses the JSON body, and hands the
/// request to the operation's handler (see `DatabaseRouteGroup`).
struct DatabaseRoutes: Sendable {
    let store: Store
    let limits: Limits
    let publicURL: String?

    /// An authenticated request (its body is decoded by the operation's route: `DatabaseRequest`).
    struct Context: Sendable {
        var session: Session
        /// `.cached` when `session` was taken from this instance's cache without asking the
        /// database (routes with `sessionMayBeCached`): the store checks the token itself.
        var proof: SessionProof
        var request: HTTPRequest
        /// For operations that park: they answer through it and return nil.
        var answering: API.Answering
        /// Base of absolute URLs in answers: `--public-url`, else from the request's Host.
        var baseURL: String
        var limits: Limits
        /// How the operation's statements run: stores are asked for `.on(execution)`.
        var execution: Execution { request.execution }

        /// What rendering needs, without the request (parked long-polls keep only this).
        func renderer(assets: AssetStore) -> RecordRenderer {
            RecordRenderer(assets: assets, baseURL: baseURL, databaseID: session.databaseID)
        }
    }

    /// What writing records into answers needs beyond the records: absolute download URLs for
    /// their assets.
    struct RecordRenderer: Sendable {
        let assets: AssetStore
        let baseURL: String
        let databaseID: Int64

        func downloadURL(_ asset: AssetValue) -> String {
            baseURL + assets.downloadPath(databaseID: databaseID, fileChecksum: asset.fileChecksum, size: asset.size)
        }
    }

    /// An operation's answer, or nil when it answers through `context.answering` (long-polls).
    typealias Operation = @Sendable (Context) async throws -> HTTPResponse?

    func register(in router: inout HTTPRouter, api: API.RouteBuilder) {
        let records = RecordHandlers(records: store.records, schemas: store.schemas, assets: store.assets, hub: store.hub,
                                     liveTokens: store.liveTokens, limits: limits)
        let zones = ZoneHandlers(zones: store.zones, hub: store.hub, liveTokens: store.liveTokens, limits: limits)
        let subscriptions = SubscriptionHandlers(subscriptions: store.subscriptions, schemas: store.schemas,
                                                 notifications: store.notifications, limits: limits)
        let assets = store.assets, schemas = store.schemas
        var group = DatabaseRouteGroup(accounts: store.accounts, publicURL: publicURL, limits: limits, api: api)
        // records/modify and records/changes may start from a cached session: their statements
        // check the token themselves.
        // The four record operations return a `RecordsAnswer`, written here (nil: a parked long-poll).
        group.post("records/modify", sessionMayBeCached: true) { (context, request: ModifyRecordsRequest) in
            try await records.modify(context, request).response(renderer: records.renderer(context))
        }
        group.post("records/lookup") { (context, request: LookupRecordsRequest) in
            try await records.lookup(context, request).response(renderer: records.renderer(context))
        }
        group.post("records/query") { (context, request: QueryRecordsRequest) in
            try await records.query(context, request).response(renderer: records.renderer(context))
        }
        group.post("records/changes", sessionMayBeCached: true) { (context, request: RecordChangesRequest) in
            try await records.changes(context, request)?.response(renderer: records.renderer(context))
        }
        group.get("zones/list", zones.list)
        group.post("zones/lookup", zones.lookup)
        group.post("zones/modify", zones.modify)
        group.post("zones/changes", zones.changes)
        group.get("users/current", zones.currentUser)
        group.get("subscriptions/list", subscriptions.list)
        group.post("subscriptions/lookup", subscriptions.lookup)
        group.post("subscriptions/modify", subscriptions.modify)
        group.post("tokens/create") { (context, _: EmptyRequest) in try await subscriptions.createToken(context) }
        let push = PushHandlers(registrations: store.pushRegistrations, settings: store.database.push)
        group.post("tokens/register", push.register)
        group.post("tokens/unregister") { (context, _: EmptyRequest) in try await push.unregister(context) }
        group.post("assets/upload") { context, request in
            try await AssetRoutes.requestUploads(context, request, assets: assets, schemas: schemas)
        }
        group.register(in: &router)
    }
}

/// Shared pieces of the wire format.
enum Wire {
    static func json(_ value: JSONValue, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json; charset=utf-8", body: value.serialized())
    }

    /// `{"zoneID": {"zoneName": ...}}` of a request, `_defaultZone` when absent.
    static func zoneName(_ body: JSONValue, required: Bool = false) throws -> String {
        try Names.zoneName(ofZoneID: body["zoneID"], required: required)
    }

    static func zoneID(_ name: String) -> JSONValue { .object(["zoneName": .string(name)]) }

    /// Base of absolute URLs in answers: `--public-url`, else `http://` and the request's authority.
    static func baseURL(_ request: HTTPRequest, publicURL: String?) -> String {
        (publicURL ?? request.origin).trimmingSuffix("/")
    }

    /// An error item: the request-level error fields plus what it is about. A record's
    /// `serverRecord` is not among them: `RecordsAnswer` writes it after them.
    static func item(_ error: ItemError, extra: JSONObject = [:]) -> JSONValue {
        var object = extra
        if let name = error.recordName { object["recordName"] = .string(name) }
        object["uuid"] = .string(UUID().uuidString.lowercased())
        object["serverErrorCode"] = .string(error.code.name)
        object["reason"] = .string(error.reason)
        return .object(object)
    }

    /// `wait`: absent, or a whole number of seconds from 0 to the limit.
    static func waitSeconds(_ body: JSONValue, limits: Limits) throws -> Int {
        guard let value = body["wait"], !value.isNull else { return 0 }
        guard case .integer(let seconds) = value, seconds >= 0, seconds <= Int64(limits.maxWaitSeconds) else {
            throw SyncError(.badRequest, "wait must be a whole number of seconds from 0 to \(limits.maxWaitSeconds).")
        }
        return Int(seconds)
    }

    static func syncToken(_ body: JSONValue) throws -> String? {
        guard let value = body["syncToken"], !value.isNull else { return nil }
        guard case .string(let text) = value, !text.isEmpty else {
            throw SyncError(.badRequest, "syncToken must be a token string from an earlier answer; leave it out to fetch again without a token.")
        }
        return text
    }
}
