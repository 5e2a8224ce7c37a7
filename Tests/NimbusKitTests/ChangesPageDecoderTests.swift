import Foundation
import Testing
@testable import NimbusKit

/// `ChangesPageDecoder` (records/changes read from its bytes) against the tree decoder it
/// replaced (`JSONSerialization` + `Database.zoneChanges`): the same pages, the same records,
/// the same errors.
@Suite("records/changes page decoder")
struct ChangesPageDecoderTests {
    let zone = ZoneID("Z")

    /// Both decoders on `json`: equal pages, or both throwing the same reason.
    func same(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let data = Data(json.utf8)
        let tree = Result { try Database.zoneChanges(JSON.decodeObject(data), zone: zone) }
        let bytes = Result { try ChangesPageDecoder.decode(data, zone: zone) }
        switch (tree, bytes) {
        case (.success(let a), .success(let b)):
            #expect(a.syncToken == b.syncToken && a.moreComing == b.moreComing && a.zoneID == b.zoneID, sourceLocation: sourceLocation)
            #expect(a.modified.count == b.modified.count, "\(json)", sourceLocation: sourceLocation)
            for (x, y) in zip(a.modified, b.modified) {
                #expect(x.id == y.id && x.recordType == y.recordType && x.changeTag == y.changeTag, sourceLocation: sourceLocation)
                #expect(x.created == y.created && x.modified == y.modified, sourceLocation: sourceLocation)
                #expect(Set(x.fields.keys) == Set(y.fields.keys), "\(json)", sourceLocation: sourceLocation)
                for (key, value) in x.fields {
                    #expect(Record.sameValue(value, y.fields[key]) && value.fieldType == y.fields[key]?.fieldType,
                            "\(key): \(value) vs \(String(describing: y.fields[key]))", sourceLocation: sourceLocation)
                }
                #expect(x.serverFields.map { Set($0.keys) } == y.serverFields.map { Set($0.keys) }, sourceLocation: sourceLocation)
            }
            #expect(a.deleted.map(\.id) == b.deleted.map(\.id) && a.deleted.map(\.recordType) == b.deleted.map(\.recordType),
                    sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            let (x, y) = (a as? NimbusError, b as? NimbusError)
            #expect(x?.code == y?.code, "\(a) vs \(b)", sourceLocation: sourceLocation)
            // Malformed JSON is reported in each parser's own words; everything else word for word.
            if !(x?.reason.contains("not JSON") ?? false) && !(y?.reason.contains("not valid JSON") ?? false) {
                #expect(x?.reason == y?.reason, "\(json)", sourceLocation: sourceLocation)
            }
        default:
            Issue.record("tree \(tree), bytes \(bytes) for \(json)", sourceLocation: sourceLocation)
        }
    }

    @Test func pagesAsTheServerWritesThem() {
        let record = """
            {"recordName":"r1","recordType":"Event","recordChangeTag":"t1","zoneID":{"zoneName":"Z"},\
            "fields":{"title":{"value":"caf\\u00e9 \\"q\\" \\\\ \\n \\ud83d\\ude00 ✓","type":"STRING"},\
            "n":{"value":-9223372036854775808,"type":"INT64"},"big":{"value":9223372036854775807,"type":"INT64"},\
            "d":{"value":0.25,"type":"DOUBLE"},"di":{"value":3,"type":"DOUBLE"},"e":{"value":1.5e3,"type":"DOUBLE"},\
            "t":{"value":1795000000123,"type":"TIMESTAMP"},"b":{"value":"AP8H","type":"BYTES"},\
            "ref":{"value":{"recordName":"p","zoneID":{"zoneName":"Other"},"action":"DELETE_SELF"},"type":"REFERENCE"},\
            "ref2":{"value":{"recordName":"q"},"type":"REFERENCE"},\
            "a":{"value":{"fileChecksum":"abc=","size":3,"downloadURL":"http://h/x"},"type":"ASSETID"},\
            "l":{"value":["a","b"],"type":"STRING_LIST"},"li":{"value":[],"type":"INT64_LIST"},\
            "lt":{"value":[1,2000],"type":"TIMESTAMP_LIST"},"gone":{"value":null,"type":"STRING"},"nov":{"type":"STRING"}},\
            "created":{"timestamp":1795000000000,"userRecordName":"_u","deviceID":"d1"},\
            "modified":{"timestamp":1795000000500.0,"userRecordName":"_u"},"extra":[1,{"x":null},true]}
            """
        same(#"{"records":[\#(record),{"recordName":"r2","recordType":"Event","deleted":true}],"syncToken":"tok","moreComing":true}"#)
        same(#"   {"moreComing":false,"syncToken":"t","records":[]}"#)  // heartbeat spaces, keys in another order
        same(#"{"syncToken":"t","records":[{"recordName":"x","zoneID":{"zoneName":"Y"},"recordType":"T","fields":{}}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","deleted":true,"fields":{"f":1}}]}"#)  // a tombstone's fields are not read
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":"nope"}]}"#)  // fields not an object: none
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"s":{"value":"AQIDBA==","type":"ENCRYPTED_BYTES"}}}]}"#)
    }

    @Test func theSameErrors() {
        same(#"{"records":[]}"#)
        same(#"{"syncToken":7,"records":[]}"#)
        same(#"{"syncToken":"t","records":[5]}"#)
        same(#"{"syncToken":"t","records":[{"recordType":"T"}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x"}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"f":"v"}}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"f":{"value":1}}}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"f":{"value":"1","type":"INT64"}}}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"f":{"value":1.5,"type":"INT64"}}}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"f":{"value":1,"type":"STRING_LIST"}}}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"f":{"value":1,"type":"WHAT"}}}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"f":{"value":"!!","type":"BYTES"}}}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"f":{"value":"!!","type":"ENCRYPTED_BYTES"}}}]}"#)
        same(#"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"f":{"value":{"zoneID":{}},"type":"REFERENCE"}}}]}"#)
        same(#"[1,2]"#)
        for broken in [#"{"syncToken":"t","records":[}"#, #"{"syncToken":"t""#, #"{"syncToken":"t"} x"#, "", "{\"a\":tru}",
                       #"{"syncToken":"t\u12"}"#, "{\"syncToken\":\"a\nb\"}", #"{"syncToken":"t","n":-}"#, #"{"syncToken":"t",}"#] {
            #expect(throws: NimbusError.self, "\(broken)") { try ChangesPageDecoder.decode(Data(broken.utf8), zone: zone) }
        }
    }

    @Test func everyCutOfAPageFailsCleanly() throws {
        let page = #"{"records":[{"recordName":"r1","recordType":"E","fields":{"s":{"value":"a\"b","type":"STRING"},"n":{"value":12,"type":"INT64"}}}],"syncToken":"tok","moreComing":false}"#
        let bytes = Array(page.utf8)
        for cut in 0..<bytes.count {
            #expect(throws: NimbusError.self) { try ChangesPageDecoder.decode(Data(bytes[0..<cut]), zone: zone) }
        }
        #expect(try ChangesPageDecoder.decode(Data(bytes), zone: zone).modified.first?.fields["s"] == .string("a\"b"))
    }

    /// The strings every record of a page repeats (`recordType`, the stamps' user and device) are
    /// decoded once and shared; equal-length different bytes, escapes, and records with fewer
    /// fields than the one before (the raw fields' buffer is reused) still decode as the tree does.
    @Test func repeatedStringsAreSharedNotConflated() throws {
        let user = "_" + String(repeating: "a", count: 32), other = "_" + String(repeating: "b", count: 32)
        func stamp(_ u: String, _ device: String = "phone-0000000000000001") -> String {
            #"{"timestamp":1795000000000,"userRecordName":"\#(u)","deviceID":"\#(device)"}"#
        }
        let records = [
            #"{"recordName":"r1","recordType":"EventTypeLongerThan15","fields":{"a":{"value":"x","type":"STRING"},"b":{"value":2,"type":"INT64"}},"created":\#(stamp(user)),"modified":\#(stamp(user))}"#,
            #"{"recordName":"gone","recordType":"EventTypeLongerThan15","deleted":true}"#,
            #"{"recordName":"r2","recordType":"EventTypeLongerThan15","fields":{"c":{"value":"y","type":"STRING"}},"created":\#(stamp(user)),"modified":\#(stamp(other))}"#,
            #"{"recordName":"r3","recordType":"EventTypeLongerThan16","fields":{},"created":\#(stamp(#"\u005f"# + String(repeating: "a", count: 32))),"modified":\#(stamp(user, "phone-0000000000000002"))}"#,
        ]
        let json = #"{"records":[\#(records.joined(separator: ","))],"syncToken":"t","moreComing":false}"#
        same(json)
        // A repeated `fields` object (the tree's parser refuses duplicate keys): the last one alone.
        let twice = #"{"syncToken":"t","records":[{"recordName":"x","recordType":"T","fields":{"a":{"value":"1","type":"STRING"}},"fields":{"b":{"value":"2","type":"STRING"}}}]}"#
        #expect(try ChangesPageDecoder.decode(Data(twice.utf8), zone: zone).modified.map { Set($0.fields.keys) } == [["b"]])
        let page = try ChangesPageDecoder.decode(Data(json.utf8), zone: zone)
        #expect(page.modified.map { Set($0.fields.keys) } == [["a", "b"], ["c"], []])
        #expect(page.modified.map(\.recordType) == ["EventTypeLongerThan15", "EventTypeLongerThan15", "EventTypeLongerThan16"])
        #expect(page.modified.map { $0.modified?.userRecordName } == [user, other, user])
        #expect(page.modified.map { $0.modified?.deviceID } == ["phone-0000000000000001", "phone-0000000000000001", "phone-0000000000000002"])
        #expect(page.modified[2].created?.userRecordName == user)
        // One copy of each repeated string: the same storage, not equal copies.
        func storage(_ string: String?) -> UnsafeRawPointer? {
            var string = string ?? ""
            return string.withUTF8 { UnsafeRawPointer($0.baseAddress) }
        }
        let names = [page.modified[0].created, page.modified[0].modified, page.modified[1].created].map { storage($0?.userRecordName) }
        #expect(Set(names).count == 1)
        #expect(storage(page.modified[0].recordType) == storage(page.modified[1].recordType))
        #expect(storage(page.modified[0].created?.deviceID) == storage(page.modified[1].modified?.deviceID))
    }
}
