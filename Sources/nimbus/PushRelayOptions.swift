import NimbusPush

/// `nimbus serve --push relay`'s options (docs/api.md "Operator flags") and the transport they make.
/// Wiring (the sender's): add `PushRelayOptions.specs` to `serve`'s options, and with `--push relay`
/// hand `try PushRelayOptions.transport(arguments)` to the sender as its `PushTransport`.
enum PushRelayOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(name: "push-relay-url", valueName: "url", environment: "NIMBUS_PUSH_RELAY_URL",
                   help: "With --push relay: the app publisher's relay, https://HOST[:PORT] (http only to a loopback address)."),
        OptionSpec(name: "push-relay-credentials", valueName: "file", environment: "NIMBUS_PUSH_RELAY_CREDENTIALS",
                   help: "With --push relay: the file 'nimbus relay installation add' wrote for this server (keep it 0600)."),
    ]

    /// The relay transport; a missing or unusable option is a usage error naming it.
    static func transport(_ arguments: ParsedArguments) throws -> RelayTransport {
        guard let url = arguments.value("push-relay-url"), !url.isEmpty else {
            throw UsageError(message: "option '--push-relay-url' is required with '--push relay'", command: "serve")
        }
        guard let path = arguments.value("push-relay-credentials"), !path.isEmpty else {
            throw UsageError(message: "option '--push-relay-credentials' is required with '--push relay'", command: "serve")
        }
        do {
            let credentials = try RelayCredentials.load(path: path)
            return try RelayTransport(configuration: RelayTransport.Configuration(url: url), credentials: credentials)
        } catch let error as RelayCredentials.InvalidError {
            throw UsageError(message: "\(error.description) (--push-relay-credentials)", command: "serve")
        } catch let error as APNsClient.StartError {
            throw UsageError(message: error.description, command: "serve")
        }
    }
}
