import Foundation
@testable import NimbusAPI
import NimbusCore
import NimbusSupport
import Testing

extension ModifyRecordsRequest: Equatable {
    public static func == (a: ModifyRecordsRequest, b: ModifyRecordsRequest) -> Bool {
        a.zoneName == b.zoneName && a.atomic == b.atomic && a.operations == b.operations
    }
}

/// records/modify bodies read straight into operations (`decodeDirectly`) against the JSON tree
/// (`init(body:limits:)`): whatever the direct reading accepts, the tree decodes to the same
/// request; what it declines, the tree decodes (or refuses) as before.
@Suite struct DirectDecodingTests {
    private let limits = Limits()

    /// The direct reading of `text`, checked against the tree's; nil when it declined.
    @discardableResult
    private func agree(_ text: String, limits: Limits = Limits(), sourceLocation: SourceLocation = #_sourceLocation) -> ModifyRecordsRequest? {
        agree(bytes: Array(text.utf8), limits: limits, sourceLocation: sourceLocation)
    }

    @discardableResult
    private func agree(bytes: [UInt8], limits: Limits = Limits(), sourceLocation: SourceLocation = #_sourceLocation) -> ModifyRecordsRequest? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let direct = ModifyRecordsRequest.decodeDirectly(bytes, limits: limits) else { return nil }
        do {
            let tree = try ModifyRecordsRequest(body: RequestInput.parseBody(bytes), limits: limits)
            #expect(direct == tree, "\(text)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("read directly, refused by the tree (\(error)): \(text)", sourceLocation: sourceLocation)
        }
        return direct
    }

    private static let common = """
        {"zoneID":{"zoneName":"Work"},"atomic":false,"operations":[
         {"operationType":"create","record":{"recordName":"n1","recordType":"Note","fields":{
           "title":{"value":"Alice's \\"iPhone\\" \\u00fc 🙂","type":"STRING"},"count":{"value":3},"score":{"type":"DOUBLE","value":1.5},
           "tags":{"value":["a","b"],"type":"STRING_LIST"},"gone":{"value":null},
           "ref":{"value":{"recordName":"n2","action":"NONE"},"type":"REFERENCE"}}}},
         {"record":{"recordType":"Note","recordName":"n2","fields":{}},"operationType":"forceUpdate"},
         {"operationType":"update","record":{"recordName":"n3","recordType":"Note","recordChangeTag":"7","fields":{"a":{"value":1}}}},
         {"operationType":"forceDelete","record":{"recordName":"n4"}},
         {"operationType":"delete","record":{"recordName":"n5","recordChangeTag":"x","fields":{}}}]}
        """

    @Test func theCommonShapesAreReadDirectlyAsTheTreeReadsThem() throws {
        let request = try #require(agree(Self.common))
        #expect(request.zoneName == "Work" && request.operations.count == 5)
        #expect(try request.operations[0].get().fields.map(\.name) == ["title", "count", "score", "tags", "gone", "ref"])
        #expect(agree(#"{"operations":[]}"#)?.zoneName == Names.defaultZone)
        #expect(agree(" \n{ \"operations\" : [ ] , \"zoneID\" : null , \"atomic\" : true }\t")?.atomic == true)
        // Keys with escapes are the keys they spell.
        #expect(agree(#"{"\u006fperations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":{"\u0076alue":1}}}}]}"#) != nil)
        // What bench/recload.c and the apps send.
        #expect(agree(#"{"zoneID":{"zoneName":"one"},"operations":[{"operationType":"create","record":{"recordName":"a-0-1-0","recordType":"AppEvent","fields":{"appName":{"value":"Safari","type":"STRING"},"timestamp":{"value":1732185600000,"type":"TIMESTAMP"},"duration":{"value":123.4,"type":"DOUBLE"}}}}]}"#) != nil)
    }

    @Test func everythingElseIsLeftToTheTree() {
        let declined = [
            #"{"operations":[{"operationType":"create","record":{"recordType":"Note"}}]}"#,             // no name: the tree names it
            #"{"operations":[{"operationType":"create","record":{"recordName":null,"recordType":"Note"}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note"}}],"desiredKeys":["a"]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note"},"desiredKeys":[]}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","zoneID":{"zoneName":"_defaultZone"}}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note"}},{"operationType":"create","record":{"recordName":"n","recordType":"Note"}}]}"#,
            #"{"operations":[{"operationType":"bogus","record":{"recordName":"n","recordType":"Note"}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n"}}]}"#,               // create needs a type
            #"{"operations":[{"operationType":"update","record":{"recordName":"n","recordType":"Note"}}]}"#, // update needs a tag
            #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"n","fields":{"a":{"value":1}}}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"bad name","recordType":"Note"}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"9Note"}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"9a":{"value":1}}}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":{"type":"STRING"}}}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":{"value":1,"type":null}}}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":{"value":1,"extra":2}}}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":{"value":1},"a":{"value":2}}}}]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","recordName":"m"}}]}"#,
            #"{"operations":[],"operations":[]}"#,
            #"{"operations":[],"zoneID":{"zoneName":"bad zone"}}"#,
            #"{"operations":[],"atomic":"yes"}"#,
            #"{"operations":[],"extra":1}"#,
            #"{"operations":{}}"#,
            #"{"zoneID":{"zoneName":"a"}}"#,
            #"{"operations":[]} x"#,
            #"{"operations":[],}"#,
            #"{"operations":[1]}"#,
            #"[]"#,
            "",
            "   ",
        ]
        for text in declined {
            #expect(ModifyRecordsRequest.decodeDirectly(Array(text.utf8), limits: limits) == nil, "\(text)")
        }
        // maxOperationsPerRequest, at its edge.
        var small = Limits()
        small.maxOperationsPerRequest = 2
        let three = #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"a"}},{"operationType":"forceDelete","record":{"recordName":"b"}},{"operationType":"forceDelete","record":{"recordName":"c"}}]}"#
        #expect(ModifyRecordsRequest.decodeDirectly(Array(three.utf8), limits: small) == nil)
        small.maxOperationsPerRequest = 3
        #expect(agree(three, limits: small)?.operations.count == 3)
    }

    /// Thousands of bodies a byte or a piece away from the common ones (and the fuzz seeds): the
    /// direct reading never accepts what the tree refuses or reads differently.
    @Test func mutatedBodiesNeverDisagree() throws {
        var seeds = [Self.common]
        let seedDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/seeds/json")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: seedDirectory.path)) ?? [] where name.hasPrefix("modify") {
            if let text = try? String(contentsOf: seedDirectory.appendingPathComponent(name), encoding: .utf8) { seeds.append(text) }
        }
        #expect(seeds.count > 1, "the fuzz seeds were found")
        let pieces = Array(#"{}[],:" \nnull0-1.5e9truefalse\"\\u00"# + "ü🙂").map { String($0) }
            + ["\"zoneID\"", "\"operations\"", "\"record\"", "\"fields\"", "\"value\"", "\"type\"", "\"recordName\"", "\"desiredKeys\"",
               "\"operationType\"", "\"create\"", "\"delete\"", "\"update\"", "{\"value\":1}", "[]", "{}"]
        var generator = SystemRandomNumberGenerator()
        var accepted = 0, declined = 0
        for seed in seeds {
            let original = Array(seed.utf8)
            for _ in 0..<1_500 {
                var bytes = original
                for _ in 0..<Int.random(in: 1...3, using: &generator) where !bytes.isEmpty {
                    let at = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: bytes.remove(at: at)
                    case 1: bytes.insert(contentsOf: Array(pieces.randomElement(using: &generator)!.utf8), at: at)
                    case 2: bytes[at] = Array(pieces.randomElement(using: &generator)!.utf8)[0]
                    default:
                        let end = min(bytes.count, at + Int.random(in: 1...40, using: &generator))
                        bytes.insert(contentsOf: bytes[at..<end], at: Int.random(in: 0...bytes.count, using: &generator))
                    }
                }
                if agree(bytes: bytes) != nil { accepted += 1 } else { declined += 1 }
            }
        }
        #expect(accepted > 100 && declined > 100, "accepted \(accepted), declined \(declined)")
    }
}
