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
        router.add("GET", "/healthz", api.task("/healthz") { _ in
            do {
                let seconds = try await store.ping()
                let body: JSONObject = ["status": "ok", "database": .object(["roundTripMs": .double((seconds * 1e6).rounded() / 1e3)])]
                return HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: JSONValue.object(body).serialized(sortedKeys: true),
                                    headers: ["Cache-Control": "no-store"])
            } catch {
                return ErrorResponse.make(SyncError(.tryAgainLater, "The database is unreachable: \(Self.describe(error))", retryAfter: 1))
            }
        })
        // A task: the push queue's gauges are read from the database at scrape time.
        router.add("GET", "/metrics", api.task("/metrics") { _ in
            HTTPResponse(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(await metrics.scrape().utf8))
        })
    }

    private static func describe(_ error: any Error) -> String {
        let text = "\(error)"
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}
