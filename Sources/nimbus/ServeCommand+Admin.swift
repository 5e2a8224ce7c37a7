import Foundation
import NimbusAdmin
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusPostgres
import NimbusStore
import NimbusSupport

/// The administration listener of `serve` (`--admin-listen`, loopback by default, `off`): the
/// console and its API, on a server of its own so that nothing of it is reachable on the
/// device-facing listener.
extension ServeCommand {
    static let adminListenOption = OptionSpec(
        name: "admin-listen", valueName: "host:port|off", environment: "NIMBUS_ADMIN_LISTEN", defaultValue: "127.0.0.1:8081",
        help: "Address of the admin console and its API (admin tokens: nimbus admin token issue); off disables it.")

    /// Starts the admin listener unless it is `off`; nil when off.
    static func startAdminServer(arguments: ParsedArguments, store: Store, limits: Limits, metrics: Metrics,
                                 deviceListener: (host: String, port: Int), pruneSchedule: PruneSchedule, logger: Logger) throws -> HTTPServer? {
        let text = arguments.value("admin-listen") ?? adminListenOption.defaultValue ?? "off"
        guard text != "off" else {
            logger.info("admin listener disabled")
            return nil
        }
        let (host, port) = try parseListen(text, option: "admin-listen")
        var http = HTTPServer.Configuration()
        http.host = host
        http.port = port
        http.eventLoopCount = 1
        http.maxConnections = 64
        http.parserLimits.maxBodyBytes = 1 << 20
        http.errorResponse = AdminConsole.errorResponse
        let facts = AdminConsole.ServerFacts(
            version: Nimbus.version, startedAt: Date(), options: effectiveOptions(arguments),
            publicURL: arguments.value("public-url") ?? "http://\(deviceListener.host):\(deviceListener.port)", pruneSchedule: pruneSchedule)
        let server = HTTPServer(configuration: http, handler: AdminConsole(store: store, limits: limits, metrics: metrics, facts: facts).handler)
        let bound = try server.start()
        logger.notice("admin console on http://\(bound.host):\(bound.port)")
        return server
    }

    /// Every option of `serve` with the value in effect; connection strings with their secrets
    /// hidden, secrets (the APNs key file) as `redacted`.
    static func effectiveOptions(_ arguments: ParsedArguments) -> [(name: String, value: String)] {
        spec.options.compactMap { option in
            guard let value = arguments.value(option.name) ?? option.defaultValue else { return nil }
            if option.isSecret { return (option.name, "redacted") }
            return (option.name, option.isConnectionString ? ConnectionString.redacted(value) : value)
        }
    }
}
