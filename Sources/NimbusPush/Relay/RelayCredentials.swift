import Foundation
import NimbusSupport

/// What `nimbus relay installation add NAME` prints once and the operator's server reads from
/// `--push-relay-credentials FILE`: the installation's id and secret. The secret never travels: both
/// sides sign with the key derived from it (`signingKey`), and the relay stores only that key.
package struct RelayCredentials: Sendable, Equatable, CustomStringConvertible {
    package struct InvalidError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    /// The installation's name at the relay (for the operator's eyes; not used in signing).
    package var name: String
    /// `ri_` + 16 base64url characters.
    package var installationID: String
    /// `rs_` + 43 base64url characters (32 random bytes).
    package var secret: String

    package init(name: String, installationID: String, secret: String) throws(InvalidError) {
        guard Self.isName(name) else { throw InvalidError(description: "the installation name '\(name)' is not 1 to 64 letters, digits, '.', '-' or '_'") }
        guard Self.isInstallationID(installationID) else { throw InvalidError(description: "the installation id is not ri_ and 16 base64url characters") }
        guard secret.hasPrefix("rs_"), let bytes = Base64URL.decode(secret.dropFirst(3)), bytes.count == 32 else {
            throw InvalidError(description: "the secret is not rs_ and 43 base64url characters")
        }
        self.name = name
        self.installationID = installationID
        self.secret = secret
    }

    /// New credentials for `name`, from the system's random number generator.
    package static func make(name: String) throws(InvalidError) -> RelayCredentials {
        var generator = SystemRandomNumberGenerator()
        func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) } }
        return try RelayCredentials(name: name, installationID: "ri_" + Base64URL.encode(random(12)), secret: "rs_" + Base64URL.encode(random(32)))
    }

    /// The HMAC key: SHA-256 over a label and the secret. The relay keeps this, never the secret, so its
    /// state file does not hold what the operator was given (whoever reads it can still sign as the
    /// installation: keep it 0600, as the APNs key beside it).
    package var signingKey: [UInt8] { Self.signingKey(secret: secret) }

    package static func signingKey(secret: String) -> [UInt8] {
        SHA256.hash("nimbus-relay-signing-key-v1\n" + secret)
    }

    package var description: String { "RelayCredentials(name: \(name), installationID: \(installationID), secret: redacted)" }

    /// The file's text: `key: value` lines, `#` comments.
    package var fileText: String {
        """
        # Nimbus push relay credentials for installation \(name). Keep this file secret (chmod 600);
        # give it to `nimbus serve --push relay --push-relay-credentials FILE`.
        installation: \(name)
        id: \(installationID)
        secret: \(secret)

        """
    }

    /// Parses `fileText`; a missing, repeated or unknown line is refused, naming it.
    package static func parse(_ text: String) throws(InvalidError) -> RelayCredentials {
        var fields: [String: String] = [:]
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else { throw InvalidError(description: "the line '\(line.prefix(40))' is not 'key: value'") }
            let key = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            guard ["installation", "id", "secret"].contains(key) else { throw InvalidError(description: "unknown key '\(key.prefix(40))'") }
            guard fields.updateValue(value, forKey: key) == nil else { throw InvalidError(description: "'\(key)' is given twice") }
        }
        for key in ["installation", "id", "secret"] where fields[key] == nil {
            throw InvalidError(description: "the '\(key):' line is missing")
        }
        return try RelayCredentials(name: fields["installation"] ?? "", installationID: fields["id"] ?? "", secret: fields["secret"] ?? "")
    }

    /// Reads and parses the file at `path`; errors name the file.
    package static func load(path: String) throws(InvalidError) -> RelayCredentials {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw InvalidError(description: "the relay credentials file \(path) cannot be read")
        }
        do {
            return try parse(String(decoding: data, as: UTF8.self))
        } catch {
            throw InvalidError(description: "the relay credentials file \(path) is not what `nimbus relay installation add` wrote: \(error.description)")
        }
    }

    package static func isName(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { RelaySignature.isBase64URL($0) || $0 == UInt8(ascii: ".") }
    }

    package static func isInstallationID(_ text: String) -> Bool {
        text.utf8.count == 19 && text.hasPrefix("ri_") && text.utf8.dropFirst(3).allSatisfy(RelaySignature.isBase64URL)
    }
}
