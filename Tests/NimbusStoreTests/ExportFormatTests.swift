import Foundation
import NimbusCore
import NimbusSupport
@testable import NimbusStore
import Testing

/// The export directory's pure parts: the manifest, asset file names, and the order records are
/// imported in (no database).
@Suite struct ExportFormatTests {
    private func reference(_ name: String, to target: String) -> RecordOperation {
        RecordOperation(kind: .create, recordName: name, recordType: "Content", fields: [
            RawField(name: "item", value: .object(["recordName": .string(target), "action": .string("DELETE_SELF")]), declaredType: "REFERENCE"),
        ])
    }

    private func plain(_ name: String) -> RecordOperation {
        RecordOperation(kind: .create, recordName: name, recordType: "Item", fields: [])
    }

    @Test func referencedRecordsComeBeforeTheirReferrersAndCyclesKeepEveryRecord() {
        let ordered = UserImport.referencedFirst([reference("a", to: "b"), reference("b", to: "c"), plain("c"), plain("d")])
        #expect(ordered.map(\.recordName) == ["c", "b", "a", "d"])
        let cycle = UserImport.referencedFirst([reference("x", to: "y"), reference("y", to: "x"), reference("z", to: "elsewhere")])
        #expect(Set(cycle.map(\.recordName)) == ["x", "y", "z"] && cycle.count == 3)
    }

    @Test func assetFilesAreNamedByTheHexOfTheChecksum() {
        #expect(ExportManifest.assetPath(fileChecksum: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
                == "assets/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(ExportManifest.assetPath(fileChecksum: "not base64") == nil)
        #expect(ExportManifest.assetPath(fileChecksum: "AAAA") == nil)  // not 32 bytes
    }

    @Test func aManifestReadsBackAndABadOneSaysWhatIsWrong() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let manifest = ExportManifest(user: "alice", exportedAt: Date(), databases: [
            .init(container: "iCloud.a.b", environment: .production, zones: ["_defaultZone", "Photos"], records: 3, subscriptions: 1),
        ], assets: 2, assetBytes: 99)
        let file = directory.appendingPathComponent(ExportManifest.fileName)
        try Data(manifest.json.serialized()).write(to: file)
        let read = try ExportManifest.read(directory)
        #expect(read.user == "alice" && read.databases == manifest.databases && read.assets == 2 && read.assetBytes == 99)

        for (text, expected) in [
            (#"{"format":"other","version":1}"#, "its format is not"),
            (#"{"format":"nimbus-export","version":2,"user":"a","databases":[]}"#, "version 2 is not 1"),
            (#"{"format":"nimbus-export","version":1,"user":"a","databases":[{"container":"..","environment":"development","zones":[]}]}"#,
             "lacks a valid container"),
            (#"{"format":"nimbus-export","version":1,"user":"a","databases":[{"container":"c","environment":"development","zones":["a/b"]}]}"#,
             "zone name that is not valid"),
        ] {
            try Data(text.utf8).write(to: file)
            #expect(throws: TransferError.self) { try ExportManifest.read(directory) }
            do { _ = try ExportManifest.read(directory) } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
        try FileManager.default.removeItem(at: file)
        do { _ = try ExportManifest.read(directory); Issue.record("a directory without a manifest was read") } catch {
            #expect("\(error)".contains("has no nimbus-export.json"))
        }
    }

    private func database(_ environment: Environment, schema: [String: FieldType], records: [RecordOperation],
                          subscriptions: [JSONValue] = []) -> UserImport.DatabasePlan {
        let entry = ExportManifest.DatabaseEntry(container: "iCloud.t", environment: environment, zones: ["Z"], records: records.count, subscriptions: 0)
        return UserImport.DatabasePlan(entry: entry, schema: ContainerSchema(container: "iCloud.t", recordTypes: ["Item": RecordTypeSchema(name: "Item", fields: schema)]),
                                       subscriptions: subscriptions, zones: [("Z", records)])
    }

    private func item(_ name: String, _ field: String, _ value: JSONValue, _ type: String) -> RecordOperation {
        RecordOperation(kind: .create, recordName: name, recordType: "Item", fields: [RawField(name: field, value: value, declaredType: type)])
    }

    private func refusal(_ body: () throws -> Void) -> String? {
        do { try body() } catch { return "\(error)" }
        return nil
    }

    @Test func theCheckBeforeWritingTypesEveryRecordAgainstTheMergedSchema() {
        let limits = Limits()
        // A field the export's schema lacks, typed as the server's schema does not: refused.
        let conflict = refusal {
            try UserImport.check(database(.development, schema: [:], records: [item("a", "n", .string("x"), "STRING")]),
                                 serverSchema: ["Item": RecordTypeSchema(name: "Item", fields: ["n": .int64])], limits: limits)
        }
        #expect(conflict?.contains("Field n of record a is INT64 in the schema of Item") == true, "\(conflict ?? "accepted")")
        #expect(conflict?.hasSuffix("nothing was imported") == true)
        // In development a new field joins the schema, and a later record must agree with it.
        let grown = refusal {
            try UserImport.check(database(.development, schema: [:], records: [item("a", "n", .string("x"), "STRING"), item("b", "n", .integer(1), "INT64")]),
                                 serverSchema: [:], limits: limits)
        }
        #expect(grown?.contains("Field n of record b is STRING") == true, "\(grown ?? "accepted")")
        // In production a field neither deployed nor in the export's schema: refused.
        let undeployed = refusal {
            try UserImport.check(database(.production, schema: ["m": .string], records: [item("a", "n", .string("x"), "STRING")]),
                                 serverSchema: [:], limits: limits)
        }
        #expect(undeployed?.contains("not deployed to production") == true, "\(undeployed ?? "accepted")")
        // Over maxRecordBytes, and a subscription that is not valid.
        var small = limits
        small.maxRecordBytes = 100
        let large = refusal {
            try UserImport.check(database(.development, schema: ["n": .string], records: [item("a", "n", .string(String(repeating: "x", count: 200)), "STRING")]),
                                 serverSchema: [:], limits: small)
        }
        #expect(large?.contains("more than this server's maxRecordBytes (100)") == true, "\(large ?? "accepted")")
        let subscription = refusal {
            try UserImport.check(database(.development, schema: ["n": .string], records: [], subscriptions: [.object(["subscriptionID": .string("s")])]),
                                 serverSchema: [:], limits: limits)
        }
        #expect(subscription?.contains("iCloud.t/development/subscriptions.json: a subscription is not valid") == true, "\(subscription ?? "accepted")")
        #expect(refusal {
            try UserImport.check(database(.production, schema: ["n": .string], records: [item("a", "n", .string("x"), "STRING")]),
                                 serverSchema: [:], limits: limits)
        } == nil)
    }
}
