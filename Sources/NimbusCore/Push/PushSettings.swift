/// How this server forwards notifications to Apple's push service (docs/api.md "Push to sleeping
/// devices"): the mode and, per container, the app's bundle id (the APNs topic). Parsed once at
/// start from `--push` and `--apns-topics`; handed to the routes and the store as a value.
package struct PushSettings: Sendable, Hashable {
    /// `--push off|direct|relay`.
    package enum Mode: String, Sendable, Hashable, CaseIterable {
        case off, direct, relay
    }

    package var mode: Mode
    /// Container → bundle id. A container without a topic cannot register.
    package var topics: [String: String]

    package init(mode: Mode = .off, topics: [String: String] = [:]) {
        self.mode = mode
        self.topics = topics
    }

    /// Push is on: registrations are stored and notifications queue pushes.
    package var isOn: Bool { mode != .off }

    /// The mode named by `--push`, or a sentence saying what is accepted.
    package static func mode(_ text: String) -> Result<Mode, PushSettingsError> {
        guard let mode = Mode(rawValue: text) else {
            return .failure(PushSettingsError(message: "--push must be off, direct or relay, not \(Names.quoted(text))"))
        }
        return .success(mode)
    }

    /// `CONTAINER=BUNDLE_ID[,CONTAINER=BUNDLE_ID…]` (spaces around entries ignored, an empty text
    /// is no topics). Refused, saying which entry, when an entry lacks `=`, a container name is
    /// invalid, a bundle id is empty or has characters outside letters, digits, '.', '-', or a
    /// container appears twice.
    package static func topics(_ text: String) -> Result<[String: String], PushSettingsError> {
        var topics: [String: String] = [:]
        for rawEntry in text.split(separator: ",", omittingEmptySubsequences: false) {
            let entry = rawEntry.trimmingSpaces
            if entry.isEmpty && text.trimmingSpaces.isEmpty { continue }
            guard let equals = entry.firstIndex(of: "=") else {
                return .failure(PushSettingsError(message: "--apns-topics entry \(Names.quoted(entry)) is not CONTAINER=BUNDLE_ID"))
            }
            let container = String(entry[..<equals]), bundle = String(entry[entry.index(after: equals)...])
            guard Names.isValidContainer(container) else {
                return .failure(PushSettingsError(message: "--apns-topics entry \(Names.quoted(entry)): \(Names.quoted(container)) is not a valid container name"))
            }
            guard isValidBundleID(bundle) else {
                return .failure(PushSettingsError(message: "--apns-topics entry \(Names.quoted(entry)): the bundle id must be letters, digits, '.' and '-', such as com.example.App"))
            }
            guard topics[container] == nil else {
                return .failure(PushSettingsError(message: "--apns-topics names container \(Names.quoted(container)) twice"))
            }
            topics[container] = bundle
        }
        return .success(topics)
    }

    /// A bundle id as Apple allows it (the APNs topic): 1–155 ASCII letters, digits, '.', '-'.
    static func isValidBundleID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 155 && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2E || byte == 0x2D
        }
    }
}

/// A push setting that does not parse: a sentence naming the flag and the value.
package struct PushSettingsError: Error, Sendable, Hashable {
    package var message: String
}

private extension StringProtocol {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
