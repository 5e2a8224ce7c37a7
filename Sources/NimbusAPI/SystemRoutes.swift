import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// Unauthenticated operational routes: `/healthz`, `/metrics`, `/limits`, `/openapi.json`.
struct SystemRoutes: Sendable {
    let store: Store
    let limits: Limits
    let metrics: Metrics

    func register(in router: inout HTTPRouter, api: API.RouteBuilder) {
        let store = store, metrics = metrics
        // The limits never change while running: encode them once.
        let limitsBody = JSONValue.object(JSONObject(limits.namedValues.map { ($0.name, .integer(Int64($0.value))) })).serialized(sortedKeys: true)
        let limitsResponse = HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: limitsBody)
        router.add("GET", "/limits", api.immediate("/limits") { _ in limitsResponse })
        // Written pretty in the source, served compact (member order kept).
        let openAPIBody = (try? JSONValue.parse(Array(OpenAPIDocument.json.utf8)))?.serialized() ?? Array(OpenAPIDocument.json.utf8)
        let openAPIResponse = HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: openAPIBody)
        router.add("GET", "/openapi.json", api.immediate("/openapi.json") { _ in openAPIResponse })
        // `ok` with the server that answered; `degraded` (503) when the database does not answer
        // within healthTimeoutSeconds, fails, or is a standby (a failover in progress).
        router.add("GET", "/healthz", api.task("/healthz") { _ in
            let degraded: (String, JSONObject) -> HTTPResponse = { reason, database in
                var response = ErrorResponse.make(SyncError(.tryAgainLater, reason, retryAfter: 1),
                                                  extra: ["status": "degraded", "database": .object(database)])
                response.headers.add(name: "Cache-Control", value: "no-store")
                return response
            }
            do {
                guard let probe = try await valueWithin(seconds: Self.healthTimeoutSeconds, { try await store.probe() }) else {
                    return degraded("The database did not answer within \(Self.healthTimeoutSeconds) seconds.", ["reachable": false])
                }
                let database: JSONObject = ["reachable": true, "roundTripMs": .double((probe.seconds * 1e6).rounded() / 1e3),
                                            "host": .string(probe.host), "role": .string(probe.role)]
                guard probe.isPrimary else {
                    return degraded("The database server \(probe.host) is a standby; writes wait for a failover to finish.", database)
                }
                let body: JSONObject = ["status": "ok", "database": .object(database)]
                return HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: JSONValue.object(body).serialized(sortedKeys: true),
                                    headers: ["Cache-Control": "no-store"])
            } catch {
                return degraded("The database is unreachable: \(Self.describe(error))", ["reachable": false])
            }
        })
        // A task: the push queue's gauges are read from the database at scrape time.
        router.add("GET", "/metrics", api.task("/metrics") { _ in
            HTTPResponse(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(await metrics.scrape().utf8))
        })
    }

    /// How long `/healthz` waits for the database before it answers `degraded`.
    static let healthTimeoutSeconds = 2.0

    private static func describe(_ error: any Error) -> String {
        let text = "\(error)"
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}
