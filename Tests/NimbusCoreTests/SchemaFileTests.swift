import Foundation
import NimbusSupport
@testable import NimbusCore
import Testing

/// Schema files (docs/api.md "Schema" and Details: Schema files) and the schemas that ship in deploy/schemas/.
@Suite struct SchemaFileTests {
    static let shippedFiles = ["applocker.json", "maccy.json", "mapplock.json"]

    static func shipped(_ file: String) throws -> ContainerSchema {
        let url = Fixture.packageRoot.appendingPathComponent("deploy/schemas").appendingPathComponent(file)
        let data = try Data(contentsOf: url)
        return try ContainerSchema.parseFile(try JSONValue.parse(Array(data)))
    }

    func parse(_ text: String) -> Result<ContainerSchema, SyncError> {
        Result { () throws(SyncError) -> ContainerSchema in try ContainerSchema.parseFile(Fixture.json(text)) }
    }

    func refusal(_ text: String) -> SyncError? {
        if case .failure(let error) = parse(text) { return error }
        return nil
    }

    /// A file with one record type `T` whose definition is `definition`.
    func file(_ definition: String) -> String {
        #"{"container": "iCloud.com.example.App", "recordTypes": {"T": \#(definition)}}"#
    }

    // MARK: the shipped schemas

    @Test func theShippedSchemaDirectoryHoldsExactlyTheKnownFiles() throws {
        let directory = Fixture.packageRoot.appendingPathComponent("deploy/schemas")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        #expect(names == Self.shippedFiles)
    }

    @Test(arguments: shippedFiles)
    func everyShippedSchemaParsesAndSurvivesItsFileForm(file: String) throws {
        let schema = try Self.shipped(file)
        #expect(!schema.recordTypes.isEmpty)
        #expect(try ContainerSchema.parseFile(schema.fileJSON) == schema)
        // And through text, as `nimbus schema show` output fed back to `schema import`.
        #expect(try ContainerSchema.parseFile(JSONValue.parse(schema.fileJSON.serialized())) == schema)
    }

    @Test func appLockerEventsAreAppendOnlyAndKeptThirtyDaysFromTheirTimestamp() throws {
        let schema = try Self.shipped("applocker.json")
        #expect(schema.container == "iCloud.com.mirxa.AppLocker")
        #expect(Set(schema.recordTypes.keys) == ["BlockedAppEvent", "FailedAuthEvent", "LockedAppList", "RemoteCommand"])
        let blocked = schema.recordTypes["BlockedAppEvent"]
        #expect(blocked == RecordTypeSchema(name: "BlockedAppEvent",
                                            fields: ["appName": .string, "bundleID": .string, "deviceName": .string, "timestamp": .timestamp],
                                            retention: RetentionPolicy(days: 30, field: "timestamp"), appendOnly: true))
        let failed = schema.recordTypes["FailedAuthEvent"]
        #expect(failed?.fields["photoAsset"] == .assetID)
        #expect(failed?.retention == RetentionPolicy(days: 30, field: "timestamp"))
        #expect(failed?.appendOnly == true)
        #expect(schema.recordTypes["LockedAppList"]?.retention == nil)
        #expect(schema.recordTypes["LockedAppList"]?.appendOnly == false)
        #expect(schema.recordTypes["LockedAppList"]?.fields == ["deviceName": .string, "apps": .assetID, "updatedAt": .timestamp])
        #expect(schema.recordTypes["RemoteCommand"]?.retention == RetentionPolicy(days: 7, field: "timestamp"))
        #expect(schema.recordTypes["RemoteCommand"]?.appendOnly == false)
        #expect(schema.recordTypes["RemoteCommand"]?.fields.count == 5)
    }

    @Test func maccyHistoryContentReferencesItsItem() throws {
        let schema = try Self.shipped("maccy.json")
        #expect(schema.container == "iCloud.org.p0deje.Maccy")
        #expect(schema.recordTypes["HistoryItem"]?.fields["numberOfCopies"] == .int64)
        #expect(schema.recordTypes["HistoryItem"]?.fields["firstCopiedAt"] == .timestamp)
        #expect(schema.recordTypes["HistoryItemContent"]?.fields == ["type": .string, "value": FieldType(.bytes, isEncrypted: true),
                                                                    "asset": .assetID, "item": .reference])
    }

    /// The clipboard's contents and their titles are what Maccy must never show the server
    /// (docs/api.md "Encrypted fields"); the rest is what the devices sort and merge on.
    @Test func maccyEncryptsTheClipboardContentsAndTitles() throws {
        let schema = try Self.shipped("maccy.json")
        let encrypted = schema.recordTypes.values.flatMap { type in
            type.fields.filter(\.value.isEncrypted).map { "\(type.name).\($0.key) \($0.value.schemaName)" }
        }
        #expect(encrypted.sorted() == ["HistoryItem.title STRING (encrypted)", "HistoryItemContent.value BYTES (encrypted)"])
        for file in ["applocker.json", "mapplock.json"] {
            #expect(try Self.shipped(file).recordTypes.values.allSatisfy { !$0.fields.values.contains(where: \.isEncrypted) })
        }
    }

    @Test func mapplockSessionsHaveListsAndBytes() throws {
        let schema = try Self.shipped("mapplock.json")
        #expect(schema.container == "iCloud.com.mapplock.universal")
        let session = schema.recordTypes["SessionConfiguration"]
        #expect(session?.fields.count == 11)
        #expect(session?.fields["duration"] == .double)
        #expect(session?.fields["blockedWebsites"] == FieldType(.string, isList: true))
        #expect(session?.fields["restrictions"] == .bytes)
        #expect(session?.retention == nil)
    }

    // MARK: file form

    @Test func theFileFormIsSortedAndOmitsDefaults() {
        let schema = ContainerSchema(container: "c.d", recordTypes: [
            "B": RecordTypeSchema(name: "B", fields: ["z": .string, "a": FieldType(.int64, isList: true)]),
            "A": RecordTypeSchema(name: "A", fields: ["t": .timestamp], retention: RetentionPolicy(days: 0), appendOnly: true),
        ])
        #expect(schema.fileJSON.serializedString == #"{"container":"c.d","recordTypes":{"A":{"fields":{"t":"TIMESTAMP"},"retention":{"days":0},"appendOnly":true},"B":{"fields":{"a":"INT64_LIST","z":"STRING"}}}}"#)
    }

    @Test func aBuiltSchemaSurvivesItsFileForm() throws {
        let schema = ContainerSchema(container: "iCloud.x", recordTypes: [
            "Empty": RecordTypeSchema(name: "Empty"),
            "Kept": RecordTypeSchema(name: "Kept", fields: ["at": .timestamp, "refs": FieldType(.reference, isList: true)],
                                     retention: RetentionPolicy(days: 36500, field: "at")),
            "Plain": RecordTypeSchema(name: "Plain", retention: RetentionPolicy(days: 1), appendOnly: true),
        ])
        #expect(try ContainerSchema.parseFile(schema.fileJSON) == schema)
    }

    @Test func nullRetentionAndAppendOnlyMeanNone() throws {
        let schema = try parse(file(#"{"fields": {}, "retention": null, "appendOnly": null}"#)).get()
        #expect(schema.recordTypes["T"] == RecordTypeSchema(name: "T"))
    }

    @Test func retentionMayOmitTheFieldAndRangesFromZeroTo36500Days() throws {
        #expect(try parse(file(#"{"fields": {}, "retention": {"days": 0}}"#)).get().recordTypes["T"]?.retention == RetentionPolicy(days: 0))
        #expect(try parse(file(#"{"fields": {}, "retention": {"days": 36500, "field": null}}"#)).get().recordTypes["T"]?.retention
                == RetentionPolicy(days: 36500))
    }

    // MARK: rejections

    @Test(arguments: [
        #"{"recordTypes": {}}"#,
        #"{"container": "", "recordTypes": {}}"#,
        #"{"container": "iCloud/com", "recordTypes": {}}"#,
        #"{"container": 5, "recordTypes": {}}"#,
        #"{"container": "iCloud.x"}"#,
        #"{"container": "iCloud.x", "recordTypes": []}"#,
        #"[]"#,
    ])
    func aFileWithoutAValidContainerOrRecordTypesIsRefused(text: String) {
        let error = refusal(text)
        #expect(error?.code == .badRequest)
        #expect(error?.reason.hasPrefix("Invalid schema file") == true)
    }

    @Test(arguments: ["1Type", "_Type", "Ty-pe", ""])
    func anInvalidRecordTypeNameIsRefused(name: String) {
        let error = refusal(#"{"container": "iCloud.x", "recordTypes": {"\#(name)": {"fields": {}}}}"#)
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("record type name") == true)
    }

    @Test(arguments: [#"{}"#, #"{"fields": []}"#, #"{"fields": null}"#, #""T""#])
    func aRecordTypeWithoutAFieldsObjectIsRefused(definition: String) {
        #expect(refusal(file(definition))?.reason.contains("fields") == true)
    }

    @Test func anUnknownFieldTypeNamesTheTypeTheFieldAndTheValidTypes() {
        let reason = refusal(#"{"container": "iCloud.x", "recordTypes": {"Event": {"fields": {"when": "DATE"}}}}"#)?.reason ?? ""
        #expect(reason.contains("field Event.when has the unknown type \"DATE\""), "\(reason)")
        #expect(reason.contains("STRING, INT64, DOUBLE, TIMESTAMP, BYTES, REFERENCE, ASSETID and their _LIST forms"), "\(reason)")
    }

    @Test(arguments: ["_f", "1f", "f-g", "f.g"])
    func anInvalidFieldNameIsRefused(name: String) {
        #expect(refusal(file(#"{"fields": {"\#(name)": "STRING"}}"#))?.reason.contains("field name") == true)
    }

    @Test(arguments: [#""TEXT""#, #""string""#, "5", #"["STRING"]"#, #""""#, #""STRING_LIST_LIST""#])
    func anUnknownFieldTypeIsRefused(type: String) {
        let error = refusal(file(#"{"fields": {"f": \#(type)}}"#))
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("T.f") == true)
    }

    @Test(arguments: [#"{}"#, #"{"days": -1}"#, #"{"days": 36501}"#, #"{"days": 1.5}"#, #"{"days": "30"}"#, #"30"#])
    func retentionNeedsWholeDaysInRange(retention: String) {
        #expect(refusal(file(#"{"fields": {}, "retention": \#(retention)}"#))?.reason.contains("days") == true)
    }

    @Test(arguments: [#""name""#, #""missing""#, #""times""#, "5"])
    func theRetentionFieldMustBeOneOfTheTypesTimestampFields(field: String) {
        let definition = #"{"fields": {"name": "STRING", "at": "TIMESTAMP", "times": "TIMESTAMP_LIST"}, "retention": {"days": 30, "field": \#(field)}}"#
        let error = refusal(file(definition))
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("TIMESTAMP") == true)
        let given = field == "5" ? "not a string" : field
        #expect(error?.reason == "Invalid schema file: the retention field of T is \(given), but it must be one of its TIMESTAMP fields (at)")
        let none = refusal(file(#"{"fields": {"name": "STRING"}, "retention": {"days": 30, "field": "name"}}"#))
        #expect(none?.reason.hasSuffix("must be one of its TIMESTAMP fields (it has none)") == true)
    }

    @Test(arguments: [#""yes""#, "1", "[]"])
    func appendOnlyMustBeABoolean(value: String) {
        #expect(refusal(file(#"{"fields": {}, "appendOnly": \#(value)}"#))?.reason.contains("appendOnly") == true)
    }
}
