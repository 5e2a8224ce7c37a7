import NimbusCore

/// `nimbus serve`'s push options (docs/api.md "Operator flags"): the mode and the topic map. A
/// value that does not parse is refused at start with a sentence saying which.
enum PushOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(name: "push", valueName: "off|direct|relay", environment: "NIMBUS_PUSH", defaultValue: "off",
                   help: "Forward notifications to Apple's push service (APNs): off, direct (this server holds the APNs key) or relay."),
        OptionSpec(name: "apns-topics", valueName: "CONTAINER=BUNDLE_ID,...", environment: "NIMBUS_APNS_TOPICS",
                   help: "Each container's app bundle id (the APNs topic), e.g. iCloud.com.example.App=com.example.App; "
                       + "devices of a container not named here cannot register for push."),
        OptionSpec(name: "apns-key-file", valueName: "KEY.p8", environment: "NIMBUS_APNS_KEY_FILE",
                   help: "The APNs authentication key (.p8, EC P-256) from Apple's developer account; needed by --push direct. Never logged or shown.",
                   isSecret: true),
        OptionSpec(name: "apns-key-id", valueName: "KEYID", environment: "NIMBUS_APNS_KEY_ID",
                   help: "The key's id (10 letters and digits); needed by --push direct."),
        OptionSpec(name: "apns-team-id", valueName: "TEAMID", environment: "NIMBUS_APNS_TEAM_ID",
                   help: "The Apple developer team id that owns the key; needed by --push direct."),
        OptionSpec(name: "apns-url", valueName: "URL", environment: "NIMBUS_APNS_URL",
                   help: "One base URL (https://HOST[:PORT], no path) for both APNs environments instead of Apple's hosts: tests, private gateways."),
        OptionSpec(name: "apns-ca-file", valueName: "PEM", environment: "NIMBUS_APNS_CA_FILE",
                   help: "An extra CA certificate to trust for APNs, beside the system's."),
    ]

    /// The push settings of `arguments`; a usage error naming the option when one does not parse.
    static func settings(_ arguments: ParsedArguments) throws -> PushSettings {
        var settings = PushSettings()
        switch PushSettings.mode(arguments.value("push") ?? "off") {
        case .success(let mode): settings.mode = mode
        case .failure(let error): throw UsageError(message: error.message, command: "serve")
        }
        switch PushSettings.topics(arguments.value("apns-topics") ?? "") {
        case .success(let topics): settings.topics = topics
        case .failure(let error): throw UsageError(message: error.message, command: "serve")
        }
        return settings
    }
}
