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

/// The one records/modify decoder (`ModifyRecordsRequest.decode`: `ModifyBody` reads the bytes,
/// `OperationDraft` holds each operation's rules). Until it replaced the JSON-tree decoder, a
/// differential test held the two equal — requests and errors, over these bodies and 160,000
/// mutations of them; the table below is what the tree answered (captured from it), so the
/// wording the API has always given stays the wording it gives.
@Suite struct ModifyDecodingTests {
    /// `text` decoded with at most 3 operations per request, creates without a name named
    /// new-1, new-2…, as one line: the request-level error (`CODE reason`), or `ok` and each
    /// operation (`✓name`, or `CODE [recordName] reason`).
    private static func outcome(_ text: String) -> String {
        var limits = Limits()
        limits.maxOperationsPerRequest = 3
        var made = 0
        do {
            let request = try ModifyRecordsRequest.decode(Array(text.utf8), limits: limits, newName: { made += 1; return "new-\(made)" })
            return "ok " + request.operations.map { result in
                switch result {
                case .success(let operation): "✓\(operation.recordName)"
                case .failure(let error): "\(error.code.name) \(error.recordName.map { "[\($0)] " } ?? "")\(error.reason)"
                }
            }.joined(separator: " | ")
        } catch let error as SyncError {
            return "\(error.code.name) \(error.reason)"
        } catch {
            return "not a SyncError: \(error)"
        }
    }

    /// Every refusal the decoder words, request-level and per operation, in the tree's words.
    static let catalogue: [(body: String, outcome: String)] = [
        (#""#,
         #"BAD_REQUEST records/modify needs an "operations" array."#),
        (#"   "#,
         #"BAD_REQUEST records/modify needs an "operations" array."#),
        (#"[]"#,
         #"BAD_REQUEST The body must be a JSON object."#),
        (#""text""#,
         #"BAD_REQUEST The body must be a JSON object."#),
        (#"{"#,
         #"BAD_REQUEST The body is not valid JSON: invalid JSON at byte 1: unexpected end of input, expected an object key"#),
        (#"{"operations":[]} x"#,
         #"BAD_REQUEST The body is not valid JSON: invalid JSON at byte 18: unexpected 'x' after the value"#),
        (#"{"operations":[],}"#,
         #"BAD_REQUEST The body is not valid JSON: invalid JSON at byte 17: expected a string key, found '}'"#),
        (#"{"operations":[],"operations":[]}"#,
         #"BAD_REQUEST The body is not valid JSON: invalid JSON at byte 17: duplicate key "operations""#),
        (#"{"operations":[{"operationType":"create","operationType":"create","record":{"recordName":"n","recordType":"Note"}}]}"#,
         #"BAD_REQUEST The body is not valid JSON: invalid JSON at byte 41: duplicate key "operationType""#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":{"value":1},"a":{"value":2}}}}]}"#,
         #"BAD_REQUEST The body is not valid JSON: invalid JSON at byte 114: duplicate key "a""#),
        (#"{"operations":[],"extra":1,"extra":2}"#,
         #"BAD_REQUEST The body is not valid JSON: invalid JSON at byte 27: duplicate key "extra""#),
        (#"{"zoneID":{"zoneName":"a"}}"#,
         #"BAD_REQUEST records/modify needs an "operations" array."#),
        (#"{"operations":{}}"#,
         #"BAD_REQUEST records/modify needs an "operations" array."#),
        (#"{"operations":null}"#,
         #"BAD_REQUEST records/modify needs an "operations" array."#),
        (#"{"operations":[],"zoneID":{"zoneName":"bad zone"}}"#,
         #"BAD_REQUEST Zone name "bad zone" is invalid: use 1–255 letters, digits, '-', '_', '.', ':'."#),
        (#"{"operations":[],"zoneID":"Work"}"#,
         #"BAD_REQUEST zoneID must be {"zoneName": "..."}."#),
        (#"{"operations":[],"zoneID":{"zoneName":null}}"#,
         #"BAD_REQUEST zoneID must be {"zoneName": "..."}."#),
        (#"{"operations":[],"atomic":"yes"}"#,
         #"BAD_REQUEST atomic must be true or false."#),
        (#"{"operations":[],"atomic":null,"zoneID":null}"#,
         #"ok "#),
        (#"{"operations":[],"desiredKeys":"a"}"#,
         #"BAD_REQUEST desiredKeys must be an array of field names."#),
        (#"{"operations":[],"desiredKeys":["a",1]}"#,
         #"BAD_REQUEST desiredKeys must be an array of field names."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"T"}},{"operationType":"forceUpdate","record":{"recordName":"x","recordType":"T"}}]}"#,
         #"BAD_REQUEST Record x appears in more than one operation; send one operation per record."#),
        (#"{"operations":[{"operationType":"forceDelete","record":{"recordName":"a"}},{"operationType":"forceDelete","record":{"recordName":"b"}},{"operationType":"forceDelete","record":{"recordName":"c"}},{"operationType":"forceDelete","record":{"recordName":"d"}}]}"#,
         #"LIMIT_EXCEEDED The request has 4 operations; maxOperationsPerRequest is 3."#),
        (#"{"operations":[{"operationType":"forceDelete","record":{"recordName":"a"}},{"operationType":"forceDelete","record":{"recordName":"b"}},{"operationType":"forceDelete","record":{"recordName":"c"}}]}"#,
         #"ok ✓a | ✓b | ✓c"#),
        (#"{"operations":[1,null,"op"]}"#,
         #"ok BAD_REQUEST An operation must be an object. | BAD_REQUEST An operation must be an object. | BAD_REQUEST An operation must be an object."#),
        (#"{"operations":[{},{"operationType":1,"record":{"recordName":"n"}},{"operationType":null}]}"#,
         #"ok BAD_REQUEST The operation has no operationType. | BAD_REQUEST [n] The operation has no operationType. | BAD_REQUEST The operation has no operationType."#),
        (#"{"operations":[{"operationType":"bogus","record":{"recordName":"n"}},{"operationType":"Create","record":{}}]}"#,
         #"ok BAD_REQUEST [n] Unknown operationType "bogus"; use one of create, update, forceUpdate, replace, forceReplace, delete, forceDelete. | BAD_REQUEST Unknown operationType "Create"; use one of create, update, forceUpdate, replace, forceReplace, delete, forceDelete."#),
        (#"{"operations":[{"operationType":"create"},{"operationType":"create","record":[]},{"operationType":"create","record":null}]}"#,
         #"ok BAD_REQUEST The operation has no record object. | BAD_REQUEST The operation has no record object. | BAD_REQUEST The operation has no record object."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":5,"recordType":"Note"}}]}"#,
         #"ok BAD_REQUEST recordName must be a string."#),
        (#"{"operations":[{"operationType":"update","record":{"recordName":"","recordType":"Note","recordChangeTag":"t"}},{"operationType":"forceDelete","record":{}}]}"#,
         #"ok BAD_REQUEST update needs a recordName. | BAD_REQUEST forceDelete needs a recordName."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"bad name","recordType":"Note"}}]}"#,
         #"ok BAD_REQUEST [bad name] Record name "bad name" is invalid: use 1–255 letters, digits, '-', '_', '.', ':'."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n1","recordType":"9Note"}},{"operationType":"create","record":{"recordName":"n2","recordType":5}}]}"#,
         #"ok BAD_REQUEST [n1] recordType must be a name starting with a letter, then letters, digits or '_'. | BAD_REQUEST [n2] recordType must be a name starting with a letter, then letters, digits or '_'."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n"}},{"operationType":"forceReplace","record":{"recordName":"m","recordType":null}}]}"#,
         #"ok BAD_REQUEST [n] create needs a recordType. | BAD_REQUEST [m] forceReplace needs a recordType."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","recordChangeTag":5}}]}"#,
         #"ok BAD_REQUEST [n] recordChangeTag must be a string."#),
        (#"{"operations":[{"operationType":"update","record":{"recordName":"n","recordType":"Note"}},{"operationType":"delete","record":{"recordName":"m"}}]}"#,
         #"ok BAD_REQUEST [n] update needs the record's current recordChangeTag. | BAD_REQUEST [m] delete needs the record's current recordChangeTag."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":[]}}]}"#,
         #"ok BAD_REQUEST [n] fields must be an object."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"9a":{"value":1}}}}]}"#,
         #"ok BAD_REQUEST [n] Field name "9a" is invalid: use a letter, then letters, digits or '_' (at most 255)."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":1}}}]}"#,
         #"ok BAD_REQUEST [n] Field a must be an object with "value" (and optionally "type")."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":{"type":"STRING"}}}}]}"#,
         #"ok BAD_REQUEST [n] Field a has no "value"; send "value": null to remove it."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":{"value":1,"type":1}}}}]}"#,
         #"ok BAD_REQUEST [n] The type of field a must be a string."#),
        (#"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note"},"desiredKeys":"title"}]}"#,
         #"ok BAD_REQUEST [n] desiredKeys must be an array of field names."#),
        (#"{"zoneID":{"zoneName":"Work"},"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","zoneID":"Work"}},{"operationType":"create","record":{"recordName":"m","recordType":"Note","zoneID":{"zoneName":"Home"}}}]}"#,
         #"ok BAD_REQUEST [n] The record's zoneID must be {"zoneName": "..."}. | BAD_REQUEST [m] The record names zone Home, but the request is for zone Work; send it in a request whose zoneID is Home."#),
        (#"{"operations":[{"operationType":"forceDelete","record":{"recordName":"n","fields":"ignored"}},{"operationType":"create","record":{"recordType":"Note","fields":{"a":{"value":null,"extra":1}}}}]}"#,
         #"ok ✓n | ✓new-1"#),
    ]

    @Test func everyProblemIsWordedAsTheJSONTreeWordedIt() {
        for (body, expected) in Self.catalogue {
            #expect(Self.outcome(body) == expected, "\(body)")
        }
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

    /// NimbusKit's shape (a zoneID in every record), desiredKeys at both levels, unknown members,
    /// a create without a name and a record of another zone.
    private static let clientShaped = """
        {"zoneID":{"zoneName":"Work"},"operations":[
         {"operationType":"create","record":{"recordName":"n1","zoneID":{"zoneName":"Work"},"recordType":"Note","fields":{
           "title":{"value":"t","type":"STRING"},"at":{"value":1732185600000,"type":"TIMESTAMP"}}},"desiredKeys":["title"]},
         {"operationType":"update","record":{"recordName":"n2","zoneID":{"zoneName":"Work","ownerRecordName":"_u"},"recordType":"Note",
           "recordChangeTag":"t2","fields":{"gone":{"value":null}},"extra":[1,{"a":2}]}},
         {"operationType":"create","record":{"recordType":"Note","zoneID":null,"fields":{}}},
         {"operationType":"forceDelete","record":{"recordName":"n4","zoneID":{"zoneName":"Other"}}},
         {"operationType":"delete","record":{"recordName":"n5","zoneID":{"zoneName":"Work"},"recordChangeTag":"x"}}],
         "atomic":true,"desiredKeys":["title","at"],"unknown":{"x":[null]}}
        """

    @Test func theCommonShapesAreReadAsMeant() throws {
        var made = 0
        let request = try ModifyRecordsRequest.decode(Array(Self.common.utf8), limits: Limits(), newName: { made += 1; return "new-\(made)" })
        #expect(request.zoneName == "Work" && !request.atomic && request.operations.count == 5)
        #expect(try request.operations[0].get() == RecordOperation(kind: .create, recordName: "n1", recordType: "Note", fields: [
            RawField(name: "title", value: "Alice's \"iPhone\" ü 🙂", declaredType: "STRING"), RawField(name: "count", value: 3),
            RawField(name: "score", value: 1.5, declaredType: "DOUBLE"), RawField(name: "tags", value: ["a", "b"], declaredType: "STRING_LIST"),
            RawField(name: "gone", value: .null), RawField(name: "ref", value: ["recordName": "n2", "action": "NONE"], declaredType: "REFERENCE"),
        ]))
        #expect(try request.operations.map { try $0.get().kind } == [.create, .forceUpdate, .update, .forceDelete, .delete])
        #expect(try request.operations[4].get().fields.isEmpty, "a delete's fields are ignored")

        let client = try ModifyRecordsRequest.decode(Array(Self.clientShaped.utf8), limits: Limits(), newName: { made += 1; return "new-\(made)" })
        #expect(client.atomic && client.operations.count == 5)
        #expect(try client.operations[0].get().desiredKeys == ["title"], "an operation's own desiredKeys win")
        #expect(try client.operations[1].get().desiredKeys == ["title", "at"])
        #expect(try client.operations[2].get().recordName == "new-1")
        #expect(client.operations[3].itemError?.reason.contains("names zone Other") == true)
        #expect(try client.operations[4].get() == RecordOperation(kind: .delete, recordName: "n5", changeTag: "x", desiredKeys: ["title", "at"]))

        #expect(Self.outcome(#"{"operations":[]}"#) == "ok ")
        #expect(Self.outcome(" \n{ \"operations\" : [ ] , \"zoneID\" : null , \"atomic\" : true }\t") == "ok ")
        // Keys with escapes are the keys they spell.
        #expect(Self.outcome(#"{"\u006fperations":[{"operationType":"cr\u0065ate","record":{"recordName":"n","recordType":"Note","fields":{"a":{"\u0076alue":1}}}}]}"#) == "ok ✓n")
    }

    /// Thousands of bodies a byte or a piece away from the common ones (and the fuzz seeds): the
    /// reader reads every one the JSON parser takes for an object, and a body it cannot read is
    /// refused in the parser's words. (NIMBUS_MUTATIONS sets the count per seed.)
    @Test func mutatedBodiesAreReadOrRefusedAsTheParserSays() throws {
        var seeds = [Self.common, Self.clientShaped] + Self.catalogue.map(\.body).filter { $0.count > 40 }
        let seedDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/seeds/json")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: seedDirectory.path)) ?? [] where name.hasPrefix("modify") {
            if let text = try? String(contentsOf: seedDirectory.appendingPathComponent(name), encoding: .utf8) { seeds.append(text) }
        }
        #expect(seeds.count > 30, "the fuzz seeds were found")
        let pieces = Array(#"{}[],:" \nnull0-1.5e9truefalse\"\\u00"# + "ü🙂").map { String($0) }
            + ["\"zoneID\"", "\"operations\"", "\"record\"", "\"fields\"", "\"value\"", "\"type\"", "\"recordName\"", "\"desiredKeys\"",
               "\"operationType\"", "\"create\"", "\"delete\"", "\"update\"", "{\"value\":1}", "[]", "{}",
               "\"zoneName\"", "\"Work\"", "{\"zoneName\":\"Work\"}", "\"atomic\"", "\"recordChangeTag\""]
        let perSeed = ProcessInfo.processInfo.environment["NIMBUS_MUTATIONS"].flatMap { Int($0) } ?? 300
        var generator = SystemRandomNumberGenerator()
        var read = 0, refused = 0
        for seed in seeds {
            let original = Array(seed.utf8)
            for _ in 0..<perSeed {
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
                let text = String(decoding: bytes, as: UTF8.self)
                let scanned = ModifyBody.scan(bytes, limits: Limits())
                switch Result(catching: { try RequestInput.parseBody(bytes) }) {
                case .success(.object(let object)) where !object.isEmpty || bytes.contains(where: { $0 > 32 }):
                    #expect(scanned != nil, "the parser took an object the reader did not: \(text)")
                    read += 1
                case .success:
                    #expect(scanned == nil)     // whitespace: an empty object
                case .failure(let error):
                    #expect(scanned == nil, "the reader took what the parser refuses: \(text)")
                    #expect(Result(catching: { try ModifyRecordsRequest.decode(bytes, limits: Limits()) }).refusal == (error as? SyncError),
                            "\(text)")
                    refused += 1
                }
            }
        }
        #expect(read > 100 && refused > 100, "read \(read), refused \(refused)")
    }
}

extension Result<RecordOperation, ItemError> {
    fileprivate var itemError: ItemError? { if case .failure(let error) = self { error } else { nil } }
}

extension Result where Failure == any Error {
    fileprivate var refusal: SyncError? { if case .failure(let error) = self { error as? SyncError } else { nil } }
}
