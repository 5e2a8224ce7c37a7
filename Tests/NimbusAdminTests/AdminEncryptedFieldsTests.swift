import NimbusSupport
@testable import NimbusAdmin
import Testing

/// The record page's fields (docs/api.md "Encrypted fields"): an encrypted value is shown by its
/// size, never its ciphertext; every other field as stored. (Scenario 56 reads the page of a
/// running server.)
@Suite struct AdminEncryptedFieldsTests {
    @Test func anEncryptedFieldIsItsDecodedSizeAndNothingElse() throws {
        let stored = #"{"note":{"value":"c2VhbGVkIHRleHQ=","type":"ENCRYPTED_BYTES"},"app":{"value":"Safari","type":"STRING"},"#
            + #""key":{"value":"QQ==","type":"ENCRYPTED_BYTES"}}"#
        let shown = AdminRoutes.consoleFields(stored)
        #expect(shown["note"] == .object(["type": .string("ENCRYPTED_BYTES"), "size": .integer(11)]))
        #expect(shown["key"] == .object(["type": .string("ENCRYPTED_BYTES"), "size": .integer(1)]))
        #expect(shown["app"] == .object(["value": .string("Safari"), "type": .string("STRING")]))
        #expect(!String(decoding: shown.serialized(), as: UTF8.self).contains("c2VhbGVk"))
    }

    @Test func unreadableStoredFieldsShowAsNone() {
        #expect(AdminRoutes.consoleFields("not json") == .object([:]))
    }
}
