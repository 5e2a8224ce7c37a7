import Foundation
import NimbusHTTP
import NimbusPush
import NimbusRelay
import NimbusSupport

/// `nimbus relay`: the publisher's push relay (docs/push.md "The relay"). Holds the APNs key, accepts
/// signed pushes from the installations it issued credentials to, forwards them to APNs and passes
/// APNs' answers back. `nimbus relay installation add|list|revoke` manages the installations.
enum RelayCommand {
    static let dataDirectoryOption = OptionSpec(name: "data-dir", valueName: "path", environment: "NIMBUS_RELAY_DATA_DIR", defaultValue: "./.nimbus-relay",
                                                help: "Directory of the relay's state: installations.json (0600), the installations' names, ids and signing keys.")

    static let spec = CommandSpec(
        name: "relay",
        overview: "Run the push relay for an app you publish: forward signed pushes from operators' servers to APNs.",
        usage: "nimbus relay --topics <bundle-id,...> --apns-key-file <p8> --apns-key-id <id> --apns-team-id <id> [--listen <host:port>] [--data-dir <path>] [options]"
            + " | nimbus relay installation add|list|revoke",
        options: [
            OptionSpec(name: "listen", valueName: "host:port", environment: "NIMBUS_RELAY_LISTEN", defaultValue: "127.0.0.1:8090",
                       help: "Address to serve the relay protocol on (put TLS in front of it); port 0 picks a free port."),
            dataDirectoryOption,
            OptionSpec(name: "topics", valueName: "BUNDLE_ID,...", environment: "NIMBUS_RELAY_TOPICS",
                       help: "Your apps' bundle ids (APNs topics) the relay pushes to; a push for any other topic is refused (400)."),
            OptionSpec(name: "apns-key-file", valueName: "path", environment: "NIMBUS_APNS_KEY_FILE", help: "The APNs key (.p8) from Apple's developer account."),
            OptionSpec(name: "apns-key-id", valueName: "id", environment: "NIMBUS_APNS_KEY_ID", help: "The key's id (10 letters and digits)."),
            OptionSpec(name: "apns-team-id", valueName: "id", environment: "NIMBUS_APNS_TEAM_ID", help: "The developer team's id."),
            OptionSpec(name: "apns-url", valueName: "url", environment: "NIMBUS_APNS_URL",
                       help: "One APNs base URL for both environments (https://HOST[:PORT]), for tests and private gateways; default: Apple's hosts."),
            OptionSpec(name: "apns-ca-file", valueName: "pem", environment: "NIMBUS_APNS_CA_FILE", help: "An extra CA to trust for APNs."),
            OptionSpec(name: "pushes-per-minute", valueName: "n", environment: "NIMBUS_RELAY_PUSHES_PER_MINUTE",
                       defaultValue: String(RelayService.defaultPushesPerMinute),
                       help: "Pushes a minute each installation may send (bursts up to the same number); more are answered 429."),
            OptionSpec(name: "event-loops", valueName: "n", environment: "NIMBUS_EVENT_LOOPS", defaultValue: "2", help: "HTTP event loop threads."),
            OptionSpec(name: "drain-timeout", valueName: "seconds", environment: "NIMBUS_DRAIN_TIMEOUT", defaultValue: "10",
                       help: "On shutdown, how long in-flight requests may take to finish."),
        ] + DatabaseOptions.specs.filter { $0.name.hasPrefix("log-") },
        subcommands: [("installation add <name>", "Issue credentials to an operator's server (printed once)."),
                      ("installation list", "List installations: name, id, added, revoked."),
                      ("installation revoke <name>", "Refuse the installation's pushes from now on.")])

    static func run(_ argv: [String]) async throws -> Int32 {
        if argv.first == "installation" { return try RelayInstallationCommands.run(Array(argv.dropFirst())) }
        guard let arguments = try spec.parse(argv) else { return 0 }
        try arguments.refusePositionals()
        try DatabaseOptions.configureLogging(arguments)
        let logger = Logger(subsystem: "relay")
        let (host, port) = try ServeCommand.parseListen(arguments.value("listen") ?? "127.0.0.1:8090")
        let topics = try parseTopics(arguments.value("topics"))
        let client = try makeAPNsClient(arguments)
        let directory = URL(fileURLWithPath: arguments.value("data-dir") ?? "./.nimbus-relay").standardizedFileURL.path
        let book = InstallationBook(file: InstallationFile(directory: directory))
        let live: Int
        do {
            live = try book.load()
        } catch {
            client.shutdown()
            throw CommandFailure(message: error.description)
        }
        var configuration = RelayService.Configuration()
        configuration.pushesPerMinute = max(try arguments.integer("pushes-per-minute") ?? RelayService.defaultPushesPerMinute, 1)
        configuration.topics = topics
        let service = RelayService(book: book, transport: client, configuration: configuration)
        var http = HTTPServer.Configuration()
        http.host = host
        http.port = port
        http.eventLoopCount = max(try arguments.integer("event-loops") ?? 2, 1)
        http.drainTimeoutSeconds = try arguments.seconds("drain-timeout") ?? 10
        http.parserLimits.maxBodyBytes = RelayWire.maxRequestBytes
        http.errorResponse = RelayError.forHTTPCore
        logger.info("starting nimbus relay \(Nimbus.version)", [
            "listen": "\(host):\(port)", "dataDir": directory, "installations": live, "pushesPerMinute": configuration.pushesPerMinute,
            "topics": topics.sorted().joined(separator: ","), "apns": arguments.value("apns-url") ?? "Apple's hosts", "keyID": arguments.value("apns-key-id") ?? "",
        ])
        if live == 0 { logger.warning("no installations yet: add one with 'nimbus relay installation add NAME --data-dir \(directory)'") }
        let shutdownRequested = ShutdownSignal()
        let trap = SignalTrap { signal in
            logger.notice("received signal \(signal); shutting down")
            shutdownRequested.fire()
        }
        let server = HTTPServer(configuration: http, handler: service.handler)
        let bound: (host: String, port: Int)
        do {
            bound = try server.start()
        } catch {
            client.shutdown()
            throw error
        }
        logger.notice("listening on http://\(bound.host):\(bound.port)")
        await shutdownRequested.wait()
        await server.shutdown()
        client.shutdown()
        withExtendedLifetime(trap) {}
        logger.notice("stopped")
        return 0
    }

    /// `--topics`: required, bundle ids separated by commas (letters, digits, '.', '-').
    static func parseTopics(_ text: String?) throws -> Set<String> {
        let topics = (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !topics.isEmpty else {
            throw UsageError(message: "option '--topics' is required: the bundle ids of your apps the relay pushes to, e.g. com.example.App", command: "relay")
        }
        for topic in topics where !topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }) {
            throw UsageError(message: "option '--topics': '\(topic)' is not a bundle id (letters, digits, '.' and '-')", command: "relay")
        }
        return Set(topics)
    }

    /// The APNs client from the key flags; each missing or unusable one is a usage error naming it.
    static func makeAPNsClient(_ arguments: ParsedArguments) throws -> APNsClient {
        func required(_ name: String) throws -> String {
            guard let value = arguments.value(name), !value.isEmpty else {
                throw UsageError(message: "option '--\(name)' is required: the relay signs APNs requests with the publisher's key", command: "relay")
            }
            return value
        }
        let keyFile = try required("apns-key-file"), keyID = try required("apns-key-id"), teamID = try required("apns-team-id")
        do {
            let key = try APNsProviderKey(contentsOfFile: keyFile)
            let credentials = try APNsCredentials(key: key, keyID: keyID, teamID: teamID)
            let configuration = APNsClient.Configuration(baseURL: arguments.value("apns-url"), caFile: arguments.value("apns-ca-file"))
            return try APNsClient(credentials: credentials, configuration: configuration)
        } catch let error as APNsProviderKey.ParseError {
            throw UsageError(message: "\(error.description) (--apns-key-file \(keyFile))", command: "relay")
        } catch let error as APNsCredentials.InvalidError {
            throw UsageError(message: error.description, command: "relay")
        } catch let error as APNsClient.StartError {
            throw UsageError(message: error.description, command: "relay")
        }
    }
}
