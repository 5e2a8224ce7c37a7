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
