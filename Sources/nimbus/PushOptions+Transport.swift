import NimbusCore
import NimbusPush

extension PushOptions {
    /// The one place `serve` decides where pushes go: nil with push off, an `APNsClient` with
    /// `--push direct`. `--push relay` is refused until the relay transport lands (it plugs in here).
    /// Every setting that cannot work is a usage error (exit 64) with a sentence saying which.
    static func makeTransport(_ arguments: ParsedArguments, settings: PushSettings) throws -> (any PushTransport)? {
        switch settings.mode {
        case .off:
            return nil
        case .relay:
            return try PushRelayOptions.transport(arguments)
        case .direct:
            return try makeAPNsClient(arguments, settings: settings)
        }
    }

    /// `--push direct`: the key, key id and team id are required; the topic map must name a container.
    private static func makeAPNsClient(_ arguments: ParsedArguments, settings: PushSettings) throws -> APNsClient {
        func required(_ name: String, _ what: String) throws -> String {
            guard let value = arguments.value(name), !value.isEmpty else {
                throw UsageError(message: "--push direct needs --\(name) (\(what))", command: "serve")
            }
            return value
        }
        let keyFile = try required("apns-key-file", "the APNs key .p8 file")
        let keyID = try required("apns-key-id", "the APNs key id")
        let teamID = try required("apns-team-id", "the Apple team id")
        guard !settings.topics.isEmpty else {
            throw UsageError(message: "--push direct needs --apns-topics CONTAINER=BUNDLE_ID (no container could register)", command: "serve")
        }
        let key: APNsProviderKey
        do {
            key = try APNsProviderKey(contentsOfFile: keyFile)
        } catch {
            throw UsageError(message: "--apns-key-file \(keyFile): \(error.description)", command: "serve")
        }
        let credentials: APNsCredentials
        do {
            credentials = try APNsCredentials(key: key, keyID: keyID, teamID: teamID)
        } catch {
            throw UsageError(message: "\(error.description) (--apns-key-id, --apns-team-id)", command: "serve")
        }
        let configuration = APNsClient.Configuration(baseURL: arguments.value("apns-url"), caFile: arguments.value("apns-ca-file"))
        do {
            return try APNsClient(credentials: credentials, configuration: configuration)
        } catch {
            throw UsageError(message: error.description, command: "serve")
        }
    }
}
