import NimbusSupport
@testable import NimbusCore
import Testing

/// docs/api.md "Encrypted fields", each rule at its edge, in the pure domain: the schema flag,
/// the type checks both ways, the ciphertext's form, queries, retention, sizes, and what
/// notifications and pushes carry. (The API fixture and scenario 56 hold the same rules through
/// the database and the wire.)
@Suite struct EncryptedFieldTests {
    static let secret = FieldType(.string, isEncrypted: true)
    /// Item: `secret` an encrypted STRING, `photoKey` an encrypted BYTES, `title` plain.
    static let item = RecordTypeSchema(name: "Item", fields: ["secret": secret, "photoKey": .encryptedBytes, "title": .string,
                                                              "at": .timestamp])

    func type(_ fields: String, environment: Environment = .development, schema: RecordTypeSchema? = item) -> Result<FieldTyper.Typed, ItemError> {
        guard case .object(let object) = Fixture.json(fields) else { return .failure(ItemError(.badRequest, "not an object")) }
        let raw = object.map { RawField(name: $0.key, value: $0.value["value"] ?? .null, declaredType: $0.value["type"]?.stringValue) }
        return FieldTyper(environment: environment).type(raw, recordName: "r1", recordType: "Item", schema: schema)
    }

    // MARK: the ciphertext's form

    @Test(arguments: ["QQ==", "QUI=", "QUJD", "AAEC", "+/+/", "c2VhbGVkIGJ5dGVz"])
    func canonicalPaddedBase64IsCiphertext(text: String) {
        #expect(Base64Text.isStandardPadded(text))
    }

    @Test(arguments: ["QQ", "QQ=", "QR==", "QUJ=", "Q===", "====", "QQ==QQ==", "-_-_", "QU JD", "QUJD\n", "QUJD=", "é+/+"])
    func otherTextIsNotCiphertext(text: String) {
        #expect(!Base64Text.isStandardPadded(text))
    }

    @Test func theDecodedSizeIsTheBytesTheTextStandsFor() {
        #expect([Base64Text.decodedCount("QQ=="), Base64Text.decodedCount("QUI="), Base64Text.decodedCount("QUJD"),
                 Base64Text.decodedCount("QUJDRA==")] == [1, 2, 3, 4])
    }

    // MARK: type checks both ways

    @Test func anEncryptedFieldTakesEncryptedBytesAndKeepsTheTextAsSent() {
        let typed = try? type(#"{"secret": {"value": "c2VhbGVk", "type": "ENCRYPTED_BYTES"}, "photoKey": {"value": "QQ==", "type": "ENCRYPTED_BYTES"}}"#).get()
        #expect(typed?.changes == ["secret": .encrypted("c2VhbGVk"), "photoKey": .encrypted("QQ==")])
        #expect(typed?.newFields == [:])
    }

    @Test(arguments: [#"{"value": "c2VhbGVk", "type": "STRING"}"#, #"{"value": "c2VhbGVk", "type": "BYTES"}"#,
                      #"{"value": "c2VhbGVk"}"#, #"{"value": 5, "type": "INT64"}"#])
    func anEncryptedFieldRefusesAnyOtherTypeOrNoneNamingTheField(entry: String) {
        let error = type(#"{"secret": \#(entry)}"#).itemError
        #expect(error?.code == .badRequest)
        #expect(error?.reason.hasPrefix("Field secret of record r1 is encrypted") == true, "\(String(describing: error))")
        #expect(error?.reason.contains("ENCRYPTED_BYTES") == true)
    }

    @Test func aPlainFieldRefusesEncryptedBytesNamingTheField() {
        let error = type(#"{"title": {"value": "c2VhbGVk", "type": "ENCRYPTED_BYTES"}}"#).itemError
        #expect(error?.code == .badRequest)
        #expect(error?.reason == "Field title of record r1 is STRING in the schema of Item, not encrypted, but the value was sent as "
            + "ENCRYPTED_BYTES; a field cannot change between plain and encrypted.")
    }

    @Test(arguments: [(#""""#, "an empty string"), (#""c2VhbGVk!""#, "not standard padded base64"), (#""QR==""#, "not standard padded base64"),
                      (#""c2VhbGV""#, "not standard padded base64"), ("5", "an integer"), (#"["QQ=="]"#, "an array"), ("null", "")])
    func emptyOrMalformedCiphertextIsRefusedNamingTheField(value: String, given: String) {
        let result = type(#"{"photoKey": {"value": \#(value), "type": "ENCRYPTED_BYTES"}}"#)
        guard !given.isEmpty else {
            let removal: FieldValue?? = .some(nil)      // null removes the field, as for any type
            #expect((try? result.get())?.changes["photoKey"] == removal)
            return
        }
        #expect(result.itemError?.code == .badRequest)
        #expect(result.itemError?.reason.hasPrefix("Field photoKey of record r1 expects ENCRYPTED_BYTES, but the value is") == true)
        #expect(result.itemError?.reason.contains(given) == true, "\(String(describing: result.itemError))")
    }

    @Test func developmentDefinesAFieldFirstSavedEncryptedAsEncrypted() {
        let typed = try? type(#"{"note": {"value": "QUJD", "type": "ENCRYPTED_BYTES"}}"#).get()
        #expect(typed?.newFields == ["note": .encryptedBytes])
        #expect(typed?.changes == ["note": .encrypted("QUJD")])
        // Once defined, the same rules as a declared one: a plain value is refused.
        let schema = RecordTypeSchema(name: "Item", fields: ["note": .encryptedBytes])
        #expect(type(#"{"note": {"value": "text"}}"#, schema: schema).itemError?.reason.contains("is encrypted") == true)
        // Production defines nothing just in time.
        #expect(type(#"{"note": {"value": "QUJD", "type": "ENCRYPTED_BYTES"}}"#, environment: .production).itemError?.reason
            .contains("not deployed to production") == true)
    }

    /// The fast path's planner takes encrypted creates (they are common: every Maccy item) and
    /// leaves to the full planner, which refuses them, what breaks the rules.
    @Test func theLeanCreatePlannerTakesCiphertextAndLeavesEveryRefusalToTheFullPlanner() {
        let schema = ["Item": Self.item]
        func create(_ fields: String) -> Result<RecordOperation, ItemError> {
            Fixture.operation(#"{"operationType":"create","record":{"recordName":"a","recordType":"Item","fields":\#(fields)}}"#)
        }
        let lean = CreatePlanner.plan([create(#"{"secret":{"value":"QUJD","type":"ENCRYPTED_BYTES"},"title":{"value":"t"}}"#)],
                                      schema: schema, context: Fixture.context())
        #expect(lean?.first?.record.fields == ["secret": .encrypted("QUJD"), "title": .string("t")])
        for fields in [#"{"secret":{"value":"QUJD"}}"#, #"{"secret":{"value":"QUJD","type":"STRING"}}"#, #"{"secret":{"value":"QUJD","type":"BYTES"}}"#,
                       #"{"title":{"value":"QUJD","type":"ENCRYPTED_BYTES"}}"#, #"{"secret":{"value":"","type":"ENCRYPTED_BYTES"}}"#] {
            #expect(CreatePlanner.plan([create(fields)], schema: schema, context: Fixture.context()) == nil, "\(fields)")
            let plan = ModifyPlanner(context: Fixture.context()).plan([create(fields)], existing: [:], schema: schema)
            #expect(plan.writes.isEmpty, "\(fields)")
        }
    }

    // MARK: schema files

    func schema(_ fields: String, retention: String = "") throws(SyncError) -> ContainerSchema {
        try ContainerSchema.parseFile(Fixture.json(#"{"container": "iCloud.x", "recordTypes": {"T": {"fields": \#(fields)\#(retention)}}}"#))
    }

    @Test func aSchemaFileDeclaresEncryptedFieldsByTheirPlaintextTypeAndWritesThemBack() throws {
        let parsed = try schema(#"{"photoKey": {"type": "BYTES", "encrypted": true}, "tags": {"type": "STRING_LIST", "encrypted": true}, "#
            + #""app": "STRING", "plain": {"type": "INT64"}, "off": {"type": "DOUBLE", "encrypted": false}}"#)
        let fields = parsed.recordTypes["T"]?.fields
        #expect(fields == ["photoKey": .encryptedBytes, "tags": FieldType(.string, isList: true, isEncrypted: true), "app": .string,
                           "plain": .int64, "off": .double])
        #expect(fields?["tags"]?.schemaName == "STRING_LIST (encrypted)")
        #expect(try ContainerSchema.parseFile(parsed.fileJSON) == parsed)
        #expect(parsed.fileJSON["recordTypes"]?["T"]?["fields"]?["photoKey"] == .object(["type": .string("BYTES"), "encrypted": .bool(true)]))
    }

    @Test(arguments: [
        (#"{"f": {"type": "REFERENCE", "encrypted": true}}"#, "cannot be encrypted"),
        (#"{"f": {"type": "ASSETID_LIST", "encrypted": true}}"#, "cannot be encrypted"),
        (#"{"f": "ENCRYPTED_BYTES"}"#, "declare the plaintext's type encrypted"),
        (#"{"f": {"type": "ENCRYPTED_BYTES", "encrypted": true}}"#, "declare the plaintext's type encrypted"),
        (#"{"f": {"type": "STRING", "encrypted": "yes"}}"#, "not true or false"),
        (#"{"f": {"type": "STRING", "secret": true}}"#, "unknown member"),
        (#"{"f": {"encrypted": true}}"#, "unknown type"),
    ])
    func aSchemaFileRefusesWhatCannotBeEncryptedNamingTheField(fields: String, words: String) {
        do {
            _ = try schema(fields)
            Issue.record("\(fields) was accepted")
        } catch {
            #expect(error.code == .badRequest)
            #expect(error.reason.contains("field T.f") && error.reason.contains(words), "\(error.reason)")
        }
    }

    @Test func anEncryptedTimestampIsNeverTheRetentionField() {
        do {
            _ = try schema(#"{"at": {"type": "TIMESTAMP", "encrypted": true}, "when": "TIMESTAMP"}"#, retention: #", "retention": {"days": 7, "field": "at"}"#)
            Issue.record("an encrypted retention field was accepted")
        } catch {
            #expect(error.code == .badRequest)
            #expect(error.reason.contains("the retention field of T is at, which is encrypted"), "\(error.reason)")
        }
        #expect((try? schema(#"{"at": {"type": "TIMESTAMP", "encrypted": true}, "when": "TIMESTAMP"}"#,
                             retention: #", "retention": {"days": 7, "field": "when"}"#)) != nil)
    }

    // MARK: queries and query subscriptions

    func query(_ body: String) -> SyncError? {
        do {
            _ = try RecordQuery.parse(Fixture.json(body), schema: ["Item": Self.item], limits: Limits())
            return nil
        } catch { return error }
    }

    @Test(arguments: [
        (#"[{"fieldName": "secret", "comparator": "EQUALS", "fieldValue": {"value": "QQ==", "type": "ENCRYPTED_BYTES"}}]"#, "secret"),
        (#"[{"fieldName": "secret", "comparator": "EQUALS", "fieldValue": {"value": "x"}}]"#, "secret"),
        (#"[{"fieldName": "photoKey", "comparator": "BEGINS_WITH", "fieldValue": {"value": "Q"}}]"#, "photoKey"),
        (#"[{"fieldName": "unknown", "comparator": "EQUALS", "fieldValue": {"value": "QQ==", "type": "ENCRYPTED_BYTES"}}]"#, "unknown"),
    ])
    func anEncryptedFieldCannotBeFilteredOn(filters: String, field: String) {
        let error = query(#"{"query": {"recordType": "Item", "filterBy": \#(filters)}}"#)
        #expect(error?.code == .badRequest)
        #expect(error?.reason == "filterBy names \(field), an encrypted field: the server cannot read it to filter on it.", "\(String(describing: error))")
    }

    @Test func anEncryptedFieldCannotBeSortedOnAndPlainFieldsStillCan() {
        let error = query(#"{"query": {"recordType": "Item", "sortBy": [{"fieldName": "title"}, {"fieldName": "secret", "ascending": false}]}}"#)
        #expect(error?.reason == "sortBy names secret, an encrypted field of Item: the server cannot read it to sort on it.")
        #expect(query(#"{"query": {"recordType": "Item", "sortBy": [{"fieldName": "title"}], "#
            + #""filterBy": [{"fieldName": "title", "comparator": "EQUALS", "fieldValue": {"value": "x"}}]}}"#) == nil)
    }

    @Test func aQuerySubscriptionCannotFilterOnAnEncryptedField() {
        let body = #"{"subscriptionID": "s", "subscriptionType": "query", "query": {"recordType": "Item", "filterBy": "#
            + #"[{"fieldName": "secret", "comparator": "NOT_EQUALS", "fieldValue": {"value": "QQ==", "type": "ENCRYPTED_BYTES"}}]}}"#
        do {
            _ = try Subscription.parse(Fixture.json(body), schema: ["Item": Self.item], limits: Limits())
            Issue.record("a filter on an encrypted field was accepted")
        } catch {
            #expect(error.code == .badRequest && error.reason.contains("filterBy names secret"), "\(error.reason)")
        }
    }

    // MARK: sizes, notifications and pushes

    @Test func ciphertextCountsTowardTheRecordSizeAsBytesDo() {
        let bytes = [UInt8](repeating: 7, count: 3_000)
        let text = FieldValue.bytes(bytes).json.stringValue ?? ""
        #expect(Record.storedSize(["k": .encrypted(text)]) == Record.storedSize(["k": .bytes(bytes)]) - "BYTES".count + "ENCRYPTED_BYTES".count)
        let size = Record.storedSize(["k": .encrypted(text)])
        // API.md: "as BYTES values do (decoded size)": 3,000 bytes, not their 4,000 characters.
        #expect(size == #"{"k":{"type":"ENCRYPTED_BYTES","value":""}}"#.utf8.count + 3_000)
        #expect(Record.storedSize(["k": .bytes(bytes)]) == #"{"k":{"type":"BYTES","value":""}}"#.utf8.count + 3_000)
        #expect(Record.storedSize(["k": .encrypted("QQ==")]) == #"{"k":{"type":"ENCRYPTED_BYTES","value":""}}"#.utf8.count + 1)
        #expect(Record.storedSize(["k": .encrypted(text)], fitsIn: size))
        #expect(!Record.storedSize(["k": .encrypted(text)], fitsIn: size - 1))
    }

    @Test func theWireFormCarriesTheCiphertextAsSent() throws {
        let record = Fixture.record("r", type: "Item", fields: ["secret": .encrypted("c2VhbGVk"), "title": .string("t")])
        var bytes: [UInt8] = []
        record.writeJSON(to: &bytes)
        #expect(bytes == RecordTests.expectedTree(record).serialized())
        #expect(try JSONValue.parse(bytes)["fields"]?["secret"] == .object(["value": .string("c2VhbGVk"), "type": .string("ENCRYPTED_BYTES")]))
        #expect(try Record.fields(fromStored: JSONValue.parse(Array(Record.storage(of: record.fields).text.utf8))) == record.fields)
    }

    /// Sealed alerts: an alert subscription's desiredKeys naming an encrypted field carry its
    /// ciphertext in the notification and the push; over the push limit, `fieldsOmitted`.
    @Test func aSealedAlertCarriesTheCiphertextUnchangedAndOmitsItWhenTooLarge() throws {
        let subscription = try Subscription.parse(Fixture.json(#"{"subscriptionID": "alerts", "subscriptionType": "query", "#
            + #""query": {"recordType": "Item"}, "notificationInfo": {"title": "Failed unlock", "desiredKeys": ["secret", "title"]}}"#),
                                                  schema: ["Item": Self.item], limits: Limits())
        let record = Fixture.record("r", type: "Item", fields: ["secret": .encrypted("c2VhbGVk"), "title": .string("mac-mini")])
        let notification = subscription.notification(id: "n1", trigger: .create, record: record, zoneName: "z")
        #expect(notification["fields"]?["secret"] == .object(["value": .string("c2VhbGVk"), "type": .string("ENCRYPTED_BYTES")]))
        let payload = PushPayload(kind: .alert, notification: notification, container: "iCloud.x", environment: "development", cursor: "c", badge: false)
        let small = try JSONValue.parse(payload.bytes(maxBytes: 4096))
        #expect(small["nimbus"]?["fields"]?["secret"]?["value"] == .string("c2VhbGVk"))
        let large = Fixture.record("r", type: "Item", fields: ["secret": .encrypted(String(repeating: "QUJD", count: 1100))])
        let big = PushPayload(kind: .alert, notification: subscription.notification(id: "n2", trigger: .create, record: large, zoneName: "z"),
                              container: "iCloud.x", environment: "development", cursor: "c", badge: false)
        let bytes = big.bytes(maxBytes: 4096)
        let omitted = try JSONValue.parse(bytes)
        #expect(bytes.count <= 4096 && omitted["nimbus"]?["fields"] == nil && omitted["nimbus"]?["fieldsOmitted"] == .bool(true))
    }
}
