/// What a provider token is made from: the `.p8` key, its key id and the team id (Apple's developer
/// account: Certificates, Identifiers & Profiles → Keys). The key is redacted in `description`.
package struct APNsCredentials: Sendable, CustomStringConvertible {
    /// Why credentials were refused, as a sentence saying which part.
    package struct InvalidError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    package let key: APNsProviderKey
    package let keyID: String
    package let teamID: String

    /// Refuses a key id or team id that is empty or not ASCII letters and digits (Apple's are 10 of them).
    package init(key: APNsProviderKey, keyID: String, teamID: String) throws(InvalidError) {
        guard Self.isIdentifier(keyID) else {
            throw InvalidError(description: "the APNs key id '\(keyID)' is not an Apple key id (letters and digits, e.g. ABC123DEFG)")
        }
        guard Self.isIdentifier(teamID) else {
            throw InvalidError(description: "the APNs team id '\(teamID)' is not an Apple team id (letters and digits, e.g. DEF123GHIJ)")
        }
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
    }

    package var description: String { "APNsCredentials(keyID: \(keyID), teamID: \(teamID), key: redacted)" }

    private static func isIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        }
    }
}
