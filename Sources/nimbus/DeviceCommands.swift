import Foundation
import NimbusCore
import NimbusStore
import NimbusSupport

/// `nimbus device pair|list|revoke`: a user's first device without pasting a token (docs/api.md
/// "Devices"). `list` and `revoke` are the `token` commands under the name users look for.
enum DeviceCommands {
    static let spec = CommandSpec(
        name: "device", overview: "Pair new devices with a code; list and revoke a user's devices.",
        usage: "nimbus device pair <user> [--device-name <name>] [--server <url>] [--no-qr] | nimbus device list <user> | nimbus device revoke <token-id>",
        options: DatabaseOptions.specs + [
            OptionSpec(name: "device-name", valueName: "name", help: "A name suggested for the new device (it chooses its own when enrolling)."),
            OptionSpec(name: "server", valueName: "url", environment: "NIMBUS_PUBLIC_URL",
                       help: "The server's public base URL, put in the pairing URL (default http://localhost:8080)."),
            OptionSpec(name: "no-qr", help: "Leave out the QR code.", isFlag: true),
        ] + ServeCommand.limitOptions.filter { ["pairing-code-seconds", "max-pending-pairing-codes"].contains($0.name) },
        subcommands: [("pair <user>", "Print a single-use pairing code, its expiry, the pairing URL and its QR code."),
                      ("list <user>", "List the user's tokens (as 'token list')."),
                      ("revoke <token-id>", "Revoke a token (as 'token revoke').")])

    static func run(_ argv: [String]) async throws -> Int32 {
        let arguments = try ParsedArguments(argv, spec: spec)
        if arguments.helpRequested || arguments.positionals.isEmpty {
            print(spec.helpText)
            return arguments.helpRequested ? 0 : 64
        }
        switch (arguments.positionals[0], arguments.positionals.count) {
        case ("pair", 2):
            return try await pair(user: arguments.positionals[1], arguments: arguments)
        case ("list", 2):
            return try await AdminCommands.withStore(arguments) { try await AdminCommands.listTokens(user: arguments.positionals[1], store: $0) }
        case ("revoke", 2):
            return try await AdminCommands.withStore(arguments) { try await AdminCommands.revokeToken(arguments.positionals[1], store: $0) }
        default:
            throw UsageError(message: "use 'device pair <user>', 'device list <user>' or 'device revoke <token-id>'", command: "device")
        }
    }

    private static func pair(user: String, arguments: ParsedArguments) async throws -> Int32 {
        let server = (arguments.value("server") ?? "http://localhost:8080").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        guard let url = URL(string: server), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw UsageError(message: "option '--server' needs an http:// or https:// URL, not '\(server)'", command: "device")
        }
        let hint = arguments.value("device-name")
        if let hint, let problem = DeviceName.problem(hint, field: "--device-name") { throw UsageError(message: problem, command: "device") }
        // The server's limits for codes, from the same flags and environment variables as `serve`.
        var limits = Limits()
        for name in ["pairingCodeSeconds", "maxPendingPairingCodes"] {
            if let value = try arguments.integer(name.kebabCased) { _ = limits.set(name, to: value) }
        }
        return try await AdminCommands.withStore(arguments) { store in
            let userID = try await store.devices.user(named: user)
            let issued = try await store.devices.pair(userID: userID, byToken: nil, deviceNameHint: hint, limits: limits)
            let pairingURL = PairingURL.make(server: server, code: issued.code)
            let expires = Date(timeIntervalSince1970: Double(issued.expiresAt) / 1000).formatted(.iso8601)
            print("code: \(issued.code.display)\nexpires: \(expires)\npairing-url: \(pairingURL)")
            if !arguments.flag("no-qr") {
                do {
                    print("\n" + (try QRCode(text: pairingURL)).terminalText())
                } catch {
                    FileHandle.standardError.write(Data("warning: the pairing URL is too long for a QR code here (\(error)); use the code\n".utf8))
                }
            }
        }
    }
}
