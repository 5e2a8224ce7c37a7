import Foundation
import NimbusCore
import NimbusSupport
import Testing

/// docs/api.md "Encrypted fields" through the API in-process, over a real database: every refusal
/// is a BAD_REQUEST item naming the field and stores nothing; what is stored comes back as sent
/// from lookups, queries and the change feed.
@Suite struct EncryptedFieldsTests {
    /// `Vault`: `secret` an encrypted STRING, `photoKey` an encrypted BYTES, `label` plain.
    static let schemaFile = #"{"container": "iCloud.test.App", "recordTypes": {"Vault": {"fields": {"#
        + #""secret": {"type": "STRING", "encrypted": true}, "photoKey": {"type": "BYTES", "encrypted": true}, "label": "STRING"}}}}"#

    static func importSchema(_ api: APIFixture, environment: Environment = .development) async throws {
        let schema = try ContainerSchema.parseFile(JSONValue.parse(Array(schemaFile.utf8)))
        try await api.database.store.schemas.importSchema(schema, environment: environment)
    }

    static func create(_ name: String, _ fields: String) -> String {
        #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Vault","fields":\#(fields)}}"#
    }

    static func modify(_ operations: String...) -> String { #"{"operations":[\#(operations.joined(separator: ","))]}"# }

    static func codes(_ answer: Answer) -> [String] { answer.items("records").map { $0["serverErrorCode"]?.stringValue ?? "ok" } }

    @Test func everyRefusalNamesTheFieldAndStoresNothing() async throws {
        try await APIFixture.with { api in
            try await Self.importSchema(api)
            let token = try await api.token()
            let answer = await api.database("records/modify", token: token, Self.modify(
                Self.create("plain-into-encrypted", #"{"secret":{"value":"hunter2","type":"STRING"}}"#),
                Self.create("untyped-into-encrypted", #"{"secret":{"value":"aHVudGVyMg=="}}"#),
                Self.create("encrypted-into-plain", #"{"label":{"value":"aHVudGVyMg==","type":"ENCRYPTED_BYTES"}}"#),
                Self.create("empty", #"{"photoKey":{"value":"","type":"ENCRYPTED_BYTES"}}"#),
                Self.create("not-base64", #"{"photoKey":{"value":"hunter2!","type":"ENCRYPTED_BYTES"}}"#),
                Self.create("unpadded", #"{"photoKey":{"value":"aHVudGVyMg","type":"ENCRYPTED_BYTES"}}"#),
                Self.create("good", #"{"secret":{"value":"aHVudGVyMg==","type":"ENCRYPTED_BYTES"},"label":{"value":"mail"}}"#)))
            #expect(Self.codes(answer) == ["BAD_REQUEST", "BAD_REQUEST", "BAD_REQUEST", "BAD_REQUEST", "BAD_REQUEST", "BAD_REQUEST", "ok"], "\(answer)")
            let reasons = answer.items("records").map { $0["reason"]?.stringValue ?? "" }
            for (reason, field) in zip(reasons, ["secret", "secret", "label", "photoKey", "photoKey", "photoKey"]) {
                #expect(reason.hasPrefix("Field \(field) of record "), "\(reason)")
            }
            let lookup = await api.database("records/lookup", token: token,
                #"{"records":[{"recordName":"plain-into-encrypted"},{"recordName":"encrypted-into-plain"},{"recordName":"empty"},{"recordName":"good"}]}"#)
            #expect(Self.codes(lookup) == ["NOT_FOUND", "NOT_FOUND", "NOT_FOUND", "ok"], "\(lookup)")
            // An atomic request with one refused field stores none of its records.
            let atomic = await api.database("records/modify", token: token, #"{"atomic":true,"operations":["#
                + Self.create("a1", #"{"secret":{"value":"QUJD","type":"ENCRYPTED_BYTES"}}"#) + ","
                + Self.create("a2", #"{"secret":{"value":"QUJD","type":"BYTES"}}"#) + "]}")
            #expect(Self.codes(atomic).contains("BAD_REQUEST"), "\(atomic)")
            let none = await api.database("records/lookup", token: token, #"{"records":[{"recordName":"a1"},{"recordName":"a2"}]}"#)
            #expect(Self.codes(none) == ["NOT_FOUND", "NOT_FOUND"], "\(none)")
        }
    }

    @Test func ciphertextComesBackAsSentFromLookupsQueriesAndChanges() async throws {
        try await APIFixture.with { api in
            try await Self.importSchema(api)
            let token = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            let ciphertext = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) }).base64EncodedString()
            let sent = JSONValue.object(["value": .string(ciphertext), "type": .string("ENCRYPTED_BYTES")])
            let created = await api.database("records/modify", token: token, Self.modify(
                Self.create("v1", #"{"photoKey":{"value":"\#(ciphertext)","type":"ENCRYPTED_BYTES"},"label":{"value":"a"}}"#)))
            #expect(created.items("records").first?["fields"]?["photoKey"] == sent, "\(created)")
            let lookup = await api.database("records/lookup", token: phone, #"{"records":[{"recordName":"v1"}]}"#)
            #expect(lookup.items("records").first?["fields"]?["photoKey"] == sent, "\(lookup)")
            let query = await api.database("records/query", token: phone, #"{"query":{"recordType":"Vault","sortBy":[{"fieldName":"label"}]}}"#)
            #expect(query.items("records").first?["fields"]?["photoKey"] == sent, "\(query)")
            let changes = await api.database("records/changes", token: phone, #"{"zoneID":{"zoneName":"_defaultZone"}}"#)
            #expect(changes.items("records").first?["fields"]?["photoKey"] == sent, "\(changes)")
            let keys = await api.database("records/lookup", token: phone, #"{"records":[{"recordName":"v1"}],"desiredKeys":["photoKey"]}"#)
            #expect(keys.items("records").first?["fields"] == .object(["photoKey": sent]), "\(keys)")
        }
    }

    @Test func queriesAndQuerySubscriptionsCannotFilterOrSortOnAnEncryptedField() async throws {
        try await APIFixture.with { api in
            try await Self.importSchema(api)
            let token = try await api.token()
            let filter = await api.database("records/query", token: token,
                #"{"query":{"recordType":"Vault","filterBy":[{"fieldName":"secret","comparator":"EQUALS","fieldValue":{"value":"QUJD","type":"ENCRYPTED_BYTES"}}]}}"#)
            #expect(filter.status == 400 && filter.serverErrorCode == "BAD_REQUEST" && filter.reason.contains("filterBy names secret"), "\(filter)")
            let sort = await api.database("records/query", token: token, #"{"query":{"recordType":"Vault","sortBy":[{"fieldName":"photoKey"}]}}"#)
            #expect(sort.status == 400 && sort.reason.contains("sortBy names photoKey"), "\(sort)")
            let subscription = await api.database("subscriptions/modify", token: token, #"{"operations":[{"operationType":"create","subscription":{"#
                + #""subscriptionID":"s1","subscriptionType":"query","query":{"recordType":"Vault","filterBy":[{"fieldName":"secret","#
                + #""comparator":"NOT_EQUALS","fieldValue":{"value":"QUJD","type":"ENCRYPTED_BYTES"}}]}}}]}"#)
            let item = subscription.items("subscriptions").first
            #expect(item?["serverErrorCode"]?.stringValue == "BAD_REQUEST" && item?["reason"]?.stringValue?.contains("filterBy names secret") == true,
                    "\(subscription)")
        }
    }

    @Test func developmentDefinesAFieldFirstSavedEncryptedAndHoldsItToThat() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            let first = await api.database("records/modify", token: token, Self.modify(
                #"{"operationType":"create","record":{"recordName":"n1","recordType":"Note","fields":{"body":{"value":"QUJD","type":"ENCRYPTED_BYTES"},"title":{"value":"t"}}}}"#))
            #expect(Self.codes(first) == ["ok"], "\(first)")
            let schema = try await api.database.store.schemas.schema(container: api.container, environment: .development)
            #expect(schema.recordTypes["Note"]?.fields == ["body": .encryptedBytes, "title": .string])
            let second = await api.database("records/modify", token: token, Self.modify(
                #"{"operationType":"create","record":{"recordName":"n2","recordType":"Note","fields":{"body":{"value":"plain"}}}}"#,
                #"{"operationType":"create","record":{"recordName":"n3","recordType":"Note","fields":{"title":{"value":"QUJD","type":"ENCRYPTED_BYTES"}}}}"#))
            #expect(Self.codes(second) == ["BAD_REQUEST", "BAD_REQUEST"], "\(second)")
            // Neither a plain value nor the schema file can turn the field plain.
            let plain = try ContainerSchema.parseFile(JSONValue.parse(Array(#"{"container":"iCloud.test.App","recordTypes":{"Note":{"fields":{"body":"BYTES"}}}}"#.utf8)))
            await #expect(throws: SyncError.self) { try await api.database.store.schemas.importSchema(plain, environment: .development) }
        }
    }

    @Test func ciphertextCountsTowardMaxRecordBytesAtTheEdge() async throws {
        var limits = Limits()
        limits.maxRecordBytes = 1_000
        try await APIFixture.with(limits: limits) { api in
            try await Self.importSchema(api)
            let token = try await api.token()
            // 800 characters of ciphertext (600 bytes decoded, which is what counts) and a plain
            // label that brings the fields to exactly maxRecordBytes, then one byte over it.
            let ciphertext = String(repeating: "QUJD", count: 200)
            let base = Record.storedSize(["photoKey": .encrypted(ciphertext), "label": .string("")])
            let json = #"{"label":{"type":"STRING","value":""},"photoKey":{"type":"ENCRYPTED_BYTES","value":"\#(ciphertext)"}}"#
            try #require(base == json.utf8.count - 800 + 600)
            let label = String(repeating: "x", count: 1_000 - base)
            try #require(Record.storedSize(["photoKey": .encrypted(ciphertext), "label": .string(label)]) == 1_000)
            let answer = await api.database("records/modify", token: token, Self.modify(
                Self.create("fits", #"{"photoKey":{"value":"\#(ciphertext)","type":"ENCRYPTED_BYTES"},"label":{"value":"\#(label)"}}"#),
                Self.create("over", #"{"photoKey":{"value":"\#(ciphertext)","type":"ENCRYPTED_BYTES"},"label":{"value":"\#(label)x"}}"#)))
            #expect(Self.codes(answer) == ["ok", "LIMIT_EXCEEDED"], "\(answer)")
        }
    }
}
