import Foundation
import Glibc
import NimbusPush
import NimbusRelay
import NimbusSupport

/// `nimbus relay installation add|list|revoke`: the relay's installations, in its data directory.
/// They work whether or not the relay runs: it re-reads the list on the next request.
enum RelayInstallationCommands {
    static let spec = CommandSpec(
        name: "relay installation",
        overview: "Issue, list and revoke the credentials operators' servers sign their pushes with.",
        usage: "nimbus relay installation add <name> [--output <file>] | nimbus relay installation list | nimbus relay installation revoke <name>",
        options: [
            RelayCommand.dataDirectoryOption,
            OptionSpec(name: "output", valueName: "file", help: "add: write the credentials to this new file (0600) instead of printing them."),
        ],
        subcommands: [("add <name>", "Issue credentials (name: letters, digits, '.', '-', '_'); printed once, never stored."),
                      ("list", "List installations: name, id, added, revoked."),
                      ("revoke <name>", "Refuse the installation's pushes from the relay's next request on.")])

    static func run(_ argv: [String]) throws -> Int32 {
        let arguments = try ParsedArguments(argv, spec: spec)
        if arguments.helpRequested || arguments.positionals.isEmpty {
            print(spec.helpText)
            return arguments.helpRequested ? 0 : 64
        }
        let file = InstallationFile(directory: URL(fileURLWithPath: arguments.value("data-dir") ?? "./.nimbus-relay").standardizedFileURL.path)
        do {
            switch (arguments.positionals[0], arguments.positionals.count) {
            case ("add", 2): return try add(name: arguments.positionals[1], output: arguments.value("output"), file: file)
            case ("list", 1): return try list(file: file)
            case ("revoke", 2): return try revoke(name: arguments.positionals[1], file: file)
            default:
                throw UsageError(message: "use 'relay installation add <name>', 'relay installation list' or 'relay installation revoke <name>'",
                                 command: "relay installation")
            }
        } catch let error as InstallationFile.Failure {
            throw CommandFailure(message: error.description)
        }
    }

    private static func add(name: String, output: String?, file: InstallationFile) throws -> Int32 {
        let credentials: RelayCredentials
        do {
            credentials = try RelayCredentials.make(name: name)
        } catch {
            throw UsageError(message: error.description, command: "relay installation")
        }
        // The output file first: a name taken or a file that cannot be written changes nothing.
        let outputFD: Int32? = try output.map { path in
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw CommandFailure(message: "cannot create \(path): \(String(cString: strerror(errno))) (it must not exist yet)") }
            return fd
        }
        defer { if let outputFD { close(outputFD) } }
        do {
            try file.update { (installations: inout [Installation]) throws(InstallationFile.Failure) in
                if let index = installations.firstIndex(where: { $0.name == name }) {
                    guard installations[index].isRevoked else {
                        throw InstallationFile.Failure(description: "installation \(name) exists; revoke it first to issue new credentials under its name")
                    }
                    installations.remove(at: index)
                }
                installations.append(Installation(name: name, id: credentials.installationID, signingKey: credentials.signingKey,
                                                  createdAt: SystemClock().nowMilliseconds()))
            }
        } catch {
            if let output { unlink(output) }
            throw error
        }
        guard let outputFD, let output else {
            print(credentials.fileText, terminator: "")
            return 0
        }
        let bytes = Array(credentials.fileText.utf8)
        let written = bytes.withUnsafeBytes { buffer in buffer.baseAddress.map { write(outputFD, $0, buffer.count) } ?? -1 }
        guard written == bytes.count, fsync(outputFD) == 0 else {
            throw CommandFailure(message: "installation \(name) was added but its credentials could not be written to \(output); revoke it and add it again")
        }
        print("installation \(name) added; its credentials are in \(output) (give it to the operator's server: --push-relay-credentials)")
        return 0
    }

    private static func list(file: InstallationFile) throws -> Int32 {
        let installations = try file.read()
        guard !installations.isEmpty else {
            print("no installations (add one with 'nimbus relay installation add NAME')")
            return 0
        }
        func time(_ milliseconds: Int64) -> String { Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(.iso8601) }
        print("NAME".padding(toLength: 24, withPad: " ", startingAt: 0) + " " + "ID".padding(toLength: 20, withPad: " ", startingAt: 0)
              + " " + "ADDED".padding(toLength: 21, withPad: " ", startingAt: 0) + " REVOKED")
        for installation in installations {
            print(installation.name.padding(toLength: 24, withPad: " ", startingAt: 0) + " " + installation.id.padding(toLength: 20, withPad: " ", startingAt: 0)
                  + " " + time(installation.createdAt).padding(toLength: 21, withPad: " ", startingAt: 0) + " "
                  + (installation.revokedAt.map(time) ?? "-"))
        }
        return 0
    }

    private static func revoke(name: String, file: InstallationFile) throws -> Int32 {
        let already = try file.update { (installations: inout [Installation]) throws(InstallationFile.Failure) -> Bool in
            guard let index = installations.firstIndex(where: { $0.name == name }) else {
                throw InstallationFile.Failure(description: "no installation named \(name) (see 'nimbus relay installation list')")
            }
            if installations[index].isRevoked { return true }
            installations[index].revokedAt = SystemClock().nowMilliseconds()
            installations[index].signingKey = []
            return false
        }
        print(already ? "installation \(name) was already revoked" : "installation \(name) revoked")
        return 0
    }
}
