import Foundation
@testable import NimbusAPI
import NimbusCore
@testable import NimbusKit
import NimbusKitCK
import NimbusSupport
import Testing

/// The records/modify bodies our own clients write — made by NimbusKit's real encoder
/// (`Database.modifyBody`, which NimbusKitCK, the sync engine and AppLocker go through), with a
/// `zoneID` in every record — are read by the byte reader (`ModifyBody.scan`; no JSON tree, no
/// fallback) into the operations they mean.
@Suite struct ClientBodiesTests {
    private let zone = NimbusKit.ZoneID("Clipboard")
    private let when = Date(timeIntervalSince1970: 1_732_185_600)

    private func id(_ name: String) -> NimbusKit.RecordID { NimbusKit.RecordID(recordName: name, zoneID: zone) }

    /// `body` read by the one decoder: it must be read from the bytes (not refused to the parser).
    private func read(_ body: Data) throws -> ModifyRecordsRequest {
        let bytes = [UInt8](body)
        #expect(ModifyBody.scan(bytes, limits: Limits()) != nil, "the byte reader read \(String(decoding: bytes, as: UTF8.self))")
        return try ModifyRecordsRequest.decode(bytes, limits: Limits())
    }

    private func expectSame(_ got: [Result<NimbusCore.RecordOperation, ItemError>], _ meant: [NimbusCore.RecordOperation],
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(got.count == meant.count, sourceLocation: sourceLocation)
        for (result, expected) in zip(got, meant) {
            guard case .success(var operation) = result else {
                Issue.record("\(expected.recordName) failed: \(result)", sourceLocation: sourceLocation)
                continue
            }
            // NimbusKit writes a record's fields in its dictionary's order.
            operation.fields.sort { $0.name < $1.name }
            #expect(operation == expected, sourceLocation: sourceLocation)
        }
    }

    @Test func nimbusKitBodiesAreReadByTheByteReaderAsMeant() throws {
        let note = NimbusKit.Record(recordType: "Note", id: id("n1"), fields: [
            "title": .string("Alice's \"iPhone\" ü 🙂\n"), "count": .int64(3), "score": .double(1.5), "at": .date(when),
            "blob": .bytes(Data([1, 2, 3])), "tags": .strings(["a", "b"]),
            "parent": .reference(NimbusKit.Reference(recordID: id("p"), action: .deleteSelf)),
            "file": .asset(NimbusKit.Asset(fileChecksum: "abc", size: 3, receipt: "r")),
        ])
        var server = NimbusKit.Record(recordType: "Note", id: id("n2"), fields: ["title": .string("old"), "count": .int64(1)])
        server.changeTag = "t7"
        var edited = server
        edited.adoptServerCopy(server)
        edited["title"] = .string("new")
        edited["count"] = nil
        let operations: [NimbusKit.RecordOperation] = [
            .save(note), .save(edited), .forceReplace(NimbusKit.Record(recordType: "Note", id: id("n3"))),
            .delete(id("n4"), changeTag: "t4"), .delete(id("n5")),
        ]
        let body = try NimbusKit.Database.modifyBody(operations[...], zone: zone, atomic: true, desiredKeys: ["title"])
        let request = try read(body)
        #expect(request.zoneName == "Clipboard" && request.atomic)
        let keys: Set<String> = ["title"]
        expectSame(request.operations, [
            NimbusCore.RecordOperation(kind: .create, recordName: "n1", recordType: "Note", fields: [
                RawField(name: "at", value: .integer(1_732_185_600_000), declaredType: "TIMESTAMP"),
                RawField(name: "blob", value: "AQID", declaredType: "BYTES"),
                RawField(name: "count", value: 3, declaredType: "INT64"),
                RawField(name: "file", value: ["fileChecksum": "abc", "size": 3, "receipt": "r"], declaredType: "ASSETID"),
                RawField(name: "parent", value: ["recordName": "p", "action": "DELETE_SELF", "zoneID": ["zoneName": "Clipboard"]],
                         declaredType: "REFERENCE"),
                RawField(name: "score", value: 1.5, declaredType: "DOUBLE"),
                RawField(name: "tags", value: ["a", "b"], declaredType: "STRING_LIST"),
                RawField(name: "title", value: "Alice's \"iPhone\" ü 🙂\n", declaredType: "STRING"),
            ], desiredKeys: keys),
            NimbusCore.RecordOperation(kind: .update, recordName: "n2", recordType: "Note", changeTag: "t7", fields: [
                RawField(name: "count", value: .null), RawField(name: "title", value: "new", declaredType: "STRING"),
            ], desiredKeys: keys),
            NimbusCore.RecordOperation(kind: .forceReplace, recordName: "n3", recordType: "Note", desiredKeys: keys),
            NimbusCore.RecordOperation(kind: .delete, recordName: "n4", changeTag: "t4", desiredKeys: keys),
            NimbusCore.RecordOperation(kind: .forceDelete, recordName: "n5", desiredKeys: keys),
        ])
        // Without atomic or desiredKeys, as the sync engine sends its batches.
        let plain = try read(NimbusKit.Database.modifyBody(operations[3...], zone: zone, atomic: false, desiredKeys: nil))
        #expect(!plain.atomic)
        expectSame(plain.operations, [
            NimbusCore.RecordOperation(kind: .delete, recordName: "n4", changeTag: "t4"),
            NimbusCore.RecordOperation(kind: .forceDelete, recordName: "n5"),
        ])
    }

    @Test func nimbusKitCKBodiesAreReadByTheByteReaderAsMeant() throws {
        let ck = CKRecord(recordType: "Clip", recordID: CKRecord.ID(recordName: "c1", zoneID: CKRecordZone.ID(zoneName: "_defaultZone")))
        ck["text"] = "hello"
        ck["pinned"] = true
        ck["count"] = 7
        ck["ratio"] = Float(0.5)
        ck["copied"] = when
        ck["source"] = CKRecord.Reference(recordID: CKRecord.ID(recordName: "s1"), action: .none)
        // What CKDatabase.modifyRecords sends for its default save policy (ifServerRecordUnchanged).
        let body = try NimbusKit.Database.modifyBody([.save(ck.record), .delete(NimbusKit.RecordID(recordName: "c0"))][...],
                                                     zone: .default, atomic: true, desiredKeys: nil)
        let request = try read(body)
        #expect(request.zoneName == Names.defaultZone)
        expectSame(request.operations, [
            NimbusCore.RecordOperation(kind: .create, recordName: "c1", recordType: "Clip", fields: [
                RawField(name: "copied", value: .integer(1_732_185_600_000), declaredType: "TIMESTAMP"),
                RawField(name: "count", value: 7, declaredType: "INT64"),
                RawField(name: "pinned", value: 1, declaredType: "INT64"),
                RawField(name: "ratio", value: 0.5, declaredType: "DOUBLE"),
                RawField(name: "source", value: ["recordName": "s1", "action": "NONE", "zoneID": ["zoneName": "_defaultZone"]],
                         declaredType: "REFERENCE"),
                RawField(name: "text", value: "hello", declaredType: "STRING"),
            ]),
            NimbusCore.RecordOperation(kind: .forceDelete, recordName: "c0"),
        ])
    }

    /// A record whose own zoneID names another zone than the request's fails alone, worded as before.
    @Test func aRecordOfAnotherZoneFailsAlone() throws {
        let body = try NimbusKit.Database.modifyBody([.create(NimbusKit.Record(recordType: "Note", id: id("n1")))][...],
                                                     zone: NimbusKit.ZoneID("Work"), atomic: false, desiredKeys: nil)
        let request = try read(body)
        guard case .failure(let error) = request.operations.first else { Issue.record("the other zone passed"); return }
        #expect(error == ItemError(.badRequest, "The record names zone Clipboard, but the request is for zone Work; "
            + "send it in a request whose zoneID is Clipboard.", recordName: "n1"))
    }
}
