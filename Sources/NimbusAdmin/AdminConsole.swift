import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// The administration listener's routes (`--admin-listen`): the console's page at `/` and its
/// JSON API under `/api/`. Never served on the device-facing listener. Every `/api/` request
/// needs an admin token (`nimbus admin token issue`); device tokens are not admin tokens.
package struct AdminConsole: Sendable {
    /// What the overview and configuration pages show about this process.
    package struct ServerFacts: Sendable {
        package var version: String
        package var startedAt: Date
        /// The effective options of `serve` (name → value), secrets left out.
        package var options: [(name: String, value: String)]
        /// Base of pairing URLs: `--public-url`, else the device listener's address.
        package var publicURL: String
        /// The scheduled prune: its options (the console's runs use them too) and next run.
        package var pruneSchedule: PruneSchedule

        package init(version: String, startedAt: Date, options: [(name: String, value: String)], publicURL: String,
                     pruneSchedule: PruneSchedule) {
            self.version = version
            self.startedAt = startedAt
            self.options = options
            self.publicURL = publicURL
            self.pruneSchedule = pruneSchedule
        }
    }

    let store: Store
    let limits: Limits
    let metrics: Metrics
    let facts: ServerFacts
    private let pruneJob = ConsolePruneJob()

    package init(store: Store, limits: Limits, metrics: Metrics, facts: ServerFacts) {
        self.store = store
        self.limits = limits
        self.metrics = metrics
        self.facts = facts
    }

    /// The handler to give the admin listener's HTTP server.
    package var handler: HTTPServer.Handler {
        var router = HTTPRouter()
        for file in ConsoleFiles.all {
            router.add("GET", file.path) { _, writer in writer.respond(Self.secured(ConsoleFiles.response(file))) }
        }
        AdminRoutes(store: store, limits: limits, metrics: metrics, facts: facts, pruneJob: pruneJob).register(in: &router)
        let routes = router
        return { request, writer in
            switch routes.match(method: request.method, path: request.path) {
            case .found(let route, let parameters):
                var request = request
                request.pathParameters = parameters
                route.handler(request, writer)
            case .methodNotAllowed(let allowed):
                writer.respond(Self.secured(ErrorResponse.methodNotAllowed(request, allowed: allowed)))
            case .notFound:
                writer.respond(Self.secured(ErrorResponse.notFound(request)))
            }
        }
    }

    /// Headers every answer of the admin listener carries, pages, JSON and errors alike: only
    /// this origin may serve anything the page uses, nothing is sniffed, referred or cached.
    static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]

    /// `response` with the security headers: the one place they are added.
    package static func secured(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        for header in securityHeaders { response.headers.replaceOrAdd(name: header.name, value: header.value) }
        return response
    }

    /// The answers of the admin listener's HTTP core (a body over 1 MiB, a malformed request).
    package static let errorResponse: HTTPServer.ErrorResponder = { status, reason in
        secured(ErrorResponse.forHTTPCore(status, reason))
    }
}

/// The console's files, shipped inside the binary: plain HTML, CSS and ES modules; no
/// framework, no build step, nothing from another origin.
enum ConsoleFiles {
    struct File: Sendable {
        var path: String
        var contentType: String
        var bytes: [UInt8]
    }

    static let all: [File] = [
        File(path: "/", contentType: "text/html; charset=utf-8", bytes: PackageResources.index_html),
        File(path: "/console.css", contentType: "text/css; charset=utf-8", bytes: PackageResources.console_css),
        File(path: "/console.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.console_js),
        File(path: "/ui.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.ui_js),
        File(path: "/pages-server.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.pages_server_js),
        File(path: "/pages-devices.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.pages_devices_js),
        File(path: "/pages-data.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.pages_data_js),
        File(path: "/pages-operations.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.pages_operations_js),
        File(path: "/pages-push.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.pages_push_js),
    ]

    static func response(_ file: File) -> HTTPResponse {
        HTTPResponse(status: .ok, contentType: file.contentType, body: file.bytes)
    }
}
