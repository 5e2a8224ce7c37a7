import Foundation
import Testing
@testable import NimbusPush

@Suite struct APNsProviderKeyTests {
    @Test func anAppleStyleP8ParsesAndNeverShowsInDescriptions() throws {
        let directory = try ScratchDirectory("nimbus-key")
        defer { directory.remove() }
        let key = try TestKeys.makeP256(in: directory)
        #expect(key.privatePEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let parsed = try APNsProviderKey(contentsOfFile: directory.file("key.p8"))
        let credentials = try APNsCredentials(key: parsed, keyID: "KEY1234567", teamID: "TEAM123456")
        let body = key.privatePEM.split(separator: "\n")[1]
        for text in ["\(parsed)", String(describing: parsed), String(reflecting: credentials), "\(credentials)"] {
            #expect(!text.contains(body.prefix(16)))
            #expect(text.contains("redacted"))
        }
    }

    @Test(arguments: [
        (["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], "is a RSA key, not an EC P-256 key"),
        (["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"], "is on curve secp384r1, not P-256"),
        (["-algorithm", "ED25519"], "is a ED25519 key, not an EC P-256 key"),
        (["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes-256-cbc", "-pass", "pass:secret"], "does not parse as a PEM private key"),
    ])
    func keysThatAreNotUnencryptedP256AreRefusedSayingWhy(genpkey: [String], sentence: String) throws {
        let directory = try ScratchDirectory("nimbus-key")
        defer { directory.remove() }
        // The public half of an encrypted key needs its password; make the private key alone.
        let path = directory.file("key.p8")
        try TestKeys.openssl(["genpkey"] + genpkey + ["-out", path])
        let error = try #require(throws: APNsProviderKey.ParseError.self) { try APNsProviderKey(contentsOfFile: path) }
        #expect(error.description.contains(sentence), "\(error)")
    }

    @Test func textThatIsNotAKeyIsRefusedSayingWhy() throws {
        let notPEM = try #require(throws: APNsProviderKey.ParseError.self) { try APNsProviderKey(pem: "MIGHAgEAMBMGByqGSM49") }
        #expect(notPEM.description.contains("is not PEM"))
        let garbage = "-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n-----END PRIVATE KEY-----\n"
        let unparsed = try #require(throws: APNsProviderKey.ParseError.self) { try APNsProviderKey(pem: garbage) }
        #expect(unparsed.description.contains("does not parse"))
        let missing = try #require(throws: APNsProviderKey.ParseError.self) { try APNsProviderKey(contentsOfFile: "/nonexistent/AuthKey.p8") }
        #expect(missing.description.contains("cannot read the APNs key file /nonexistent/AuthKey.p8"))
    }

    @Test func keyAndTeamIDsMustBeAppleIdentifiers() throws {
        let directory = try ScratchDirectory("nimbus-key")
        defer { directory.remove() }
        let key = try APNsProviderKey(pem: TestKeys.makeP256(in: directory).privatePEM)
        for (keyID, teamID, word) in [("", "TEAM123456", "key id"), ("KEY\"1", "TEAM123456", "key id"), ("KEY1234567", "TEAM 1", "team id")] {
            let error = try #require(throws: APNsCredentials.InvalidError.self) { try APNsCredentials(key: key, keyID: keyID, teamID: teamID) }
            #expect(error.description.contains(word))
        }
    }
}
