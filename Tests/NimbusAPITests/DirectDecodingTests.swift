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

/// The one records/modify decoder (`ModifyRecordsRequest.decode`, reading the bytes) against the
/// JSON-tree decoder it replaced (`TreeReference`, kept here only to compare): for every body, the
/// same request or the same error, word for word.
@Suite struct DirectDecodingTests {
    private let limits = Limits()

    private static func outcome(_ decode: () throws -> ModifyRecordsRequest) -> Result<ModifyRecordsRequest, SyncError> {
        do { return .success(try decode()) } catch let error as SyncError { return .failure(error) } catch {
            return .failure(SyncError(.internalError, "\(error)"))
        }
    }

    /// The one decoder's reading of `text`, checked against the tree's; nil when refused.
    @discardableResult
    private func agree(_ text: String, limits: Limits = Limits(), sourceLocation: SourceLocation = #_sourceLocation) -> ModifyRecordsRequest? {
        agree(bytes: Array(text.utf8), limits: limits, sourceLocation: sourceLocation)
    }

    @discardableResult
    private func agree(bytes: [UInt8], limits: Limits = Limits(), sourceLocation: SourceLocation = #_sourceLocation) -> ModifyRecordsRequest? {
        let text = String(decoding: bytes, as: UTF8.self)
        var made = 0, treeMade = 0
        let one = Self.outcome { try ModifyRecordsRequest.decode(bytes, limits: limits, newName: { made += 1; return "new-\(made)" }) }
        let tree = Self.outcome {
            try TreeReference.decode(RequestInput.parseBody(bytes), limits: limits, newName: { treeMade += 1; return "new-\(treeMade)" })
        }
        #expect(one == tree, "\(text)", sourceLocation: sourceLocation)
        return try? one.get()
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

    @Test func theCommonShapesAreReadDirectlyAsTheTreeReadsThem() throws {
        let client = try #require(agree(Self.clientShaped))
        #expect(client.operations.count == 5 && client.atomic)
        #expect(client.operations.filter { (try? $0.get()) != nil }.count == 4, "the record of zone Other fails alone")
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

    @Test func everyOtherShapeIsReadOrRefusedAsTheTreeDid() {
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
            agree(text)
        }
        // maxOperationsPerRequest, at its edge.
        var small = Limits()
        small.maxOperationsPerRequest = 2
        let three = #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"a"}},{"operationType":"forceDelete","record":{"recordName":"b"}},{"operationType":"forceDelete","record":{"recordName":"c"}}]}"#
        #expect(agree(three, limits: small) == nil)
        small.maxOperationsPerRequest = 3
        #expect(agree(three, limits: small)?.operations.count == 3)
    }

    /// Thousands of bodies a byte or a piece away from the common ones (and the fuzz seeds): the
    /// direct reading never accepts what the tree refuses or reads differently.
    @Test func mutatedBodiesNeverDisagree() throws {
        var seeds = [Self.common, Self.clientShaped]
        let seedDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/seeds/json")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: seedDirectory.path)) ?? [] where name.hasPrefix("modify") {
            if let text = try? String(contentsOf: seedDirectory.appendingPathComponent(name), encoding: .utf8) { seeds.append(text) }
        }
        #expect(seeds.count > 1, "the fuzz seeds were found")
        let pieces = Array(#"{}[],:" \nnull0-1.5e9truefalse\"\\u00"# + "ü🙂").map { String($0) }
            + ["\"zoneID\"", "\"operations\"", "\"record\"", "\"fields\"", "\"value\"", "\"type\"", "\"recordName\"", "\"desiredKeys\"",
               "\"operationType\"", "\"create\"", "\"delete\"", "\"update\"", "{\"value\":1}", "[]", "{}",
               "\"zoneName\"", "\"Work\"", "{\"zoneName\":\"Work\"}", "\"atomic\"", "\"recordChangeTag\""]
        var generator = SystemRandomNumberGenerator()
        var accepted = 0, declined = 0
        for seed in seeds {
            let original = Array(seed.utf8)
            for _ in 0..<(ProcessInfo.processInfo.environment["NIMBUS_MUTATIONS"].flatMap { Int($0) } ?? 1_500) {
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
        #expect(accepted > 100 && declined > 100, "accepted \(accepted), refused \(declined)")
    }
}

/// The JSON-tree decoder of records/modify as it was before the one decoder, to compare with.
enum TreeReference {
    static func decode(_ body: JSONValue, limits: Limits, newName: () -> String) throws -> ModifyRecordsRequest {
        let zoneName = try Wire.zoneName(body)
        let entries = try RequestFields.entries(body, "operations", verb: "has", missing: "records/modify needs an \"operations\" array.",
                                                limits: limits)
        var atomic = false
        if let value = body["atomic"], !value.isNull {
            guard case .bool(let flag) = value else { throw SyncError(.badRequest, "atomic must be true or false.") }
            atomic = flag
        }
        let sharedKeys = try RequestFields.desiredKeys(body)
        var operations: [Result<RecordOperation, ItemError>] = []
        var seen = Set<String>()
        for entry in entries {
            var parsed = parse(entry)
            if case .success(let operation) = parsed, let problem = zoneContradiction(entry, requestZone: zoneName) {
                parsed = .failure(ItemError(.badRequest, problem, recordName: operation.recordName))
            }
            if case .success(var operation) = parsed {
                if operation.recordName.isEmpty { operation.recordName = newName() }
                if operation.desiredKeys == nil { operation.desiredKeys = sharedKeys }
                guard seen.insert(operation.recordName).inserted else {
                    throw SyncError(.badRequest, "Record \(operation.recordName) appears in more than one operation; send one operation per record.")
                }
                parsed = .success(operation)
            }
            operations.append(parsed)
        }
        var request = try ModifyRecordsRequest.decode(Array(#"{"operations":[]}"#.utf8), limits: limits)
        request.zoneName = zoneName
        request.operations = operations
        request.atomic = atomic
        return request
    }

    static func zoneContradiction(_ entry: JSONValue, requestZone: String) -> String? {
        guard let zone = entry["record"]?["zoneID"], !zone.isNull else { return nil }
        guard case .string(let name)? = zone["zoneName"] else {
            return "The record's zoneID must be {\"zoneName\": \"...\"}."
        }
        guard name == requestZone else {
            return "The record names zone \(name), but the request is for zone \(requestZone); send it in a request whose zoneID is \(name)."
        }
        return nil
    }

    /// Parses one element of `operations`. A malformed object is an item error (docs/api.md).
    static func parse(_ json: JSONValue) -> Result<RecordOperation, ItemError> {
        func fail(_ reason: String, _ name: String? = nil) -> Result<RecordOperation, ItemError> {
            .failure(ItemError(.badRequest, reason, recordName: name))
        }
        guard case .object(let object) = json else { return fail("An operation must be an object.") }
        let record = object["record"]
        var name: String?
        if case .string(let text)? = record?["recordName"] { name = text }
        guard case .string(let kindText)? = object["operationType"] else {
            return fail("The operation has no operationType.", name)
        }
        guard let kind = RecordOperation.Kind(rawValue: kindText) else {
            return fail("Unknown operationType \(Names.quoted(kindText)); use one of \(RecordOperation.Kind.allCases.map(\.rawValue).joined(separator: ", ")).", name)
        }
        guard case .object(let recordObject)? = record else { return fail("The operation has no record object.", name) }
        var operation = RecordOperation(kind: kind, recordName: name ?? "")
        if let nameValue = recordObject["recordName"], !nameValue.isNull {
            guard case .string = nameValue else { return fail("recordName must be a string.") }
        }
        if operation.recordName.isEmpty {
            guard kind == .create else { return fail("\(kind.rawValue) needs a recordName.") }
        } else if !Names.isValidRecordName(operation.recordName) {
            return fail("Record name \(Names.quoted(operation.recordName)) is invalid: use 1–255 letters, digits, '-', '_', '.', ':'.", name)
        }
        if let typeValue = recordObject["recordType"], !typeValue.isNull {
            guard case .string(let typeText) = typeValue, Names.isValidRecordType(typeText) else {
                return fail("recordType must be a name starting with a letter, then letters, digits or '_'.", name)
            }
            operation.recordType = typeText
        } else if kind.createsMissing {
            return fail("\(kind.rawValue) needs a recordType.", name)
        }
        if let tagValue = recordObject["recordChangeTag"], !tagValue.isNull {
            guard case .string(let tag) = tagValue else { return fail("recordChangeTag must be a string.", name) }
            operation.changeTag = tag
        }
        if kind.checksTag, operation.changeTag == nil {
            return fail("\(kind.rawValue) needs the record's current recordChangeTag.", name)
        }
        if let fieldsValue = recordObject["fields"], !fieldsValue.isNull, !kind.isDelete {
            guard case .object(let fields) = fieldsValue else { return fail("fields must be an object.", name) }
            for (fieldName, entry) in fields {
                guard Names.isValidFieldName(fieldName) else {
                    return fail("Field name \(Names.quoted(fieldName)) is invalid: use a letter, then letters, digits or '_' (at most 255).", name)
                }
                guard case .object(let entryObject) = entry else {
                    return fail("Field \(fieldName) must be an object with \"value\" (and optionally \"type\").", name)
                }
                guard let value = entryObject["value"] else {
                    return fail("Field \(fieldName) has no \"value\"; send \"value\": null to remove it.", name)
                }
                var declared: String?
                if let typeValue = entryObject["type"], !typeValue.isNull {
                    guard case .string(let typeText) = typeValue else { return fail("The type of field \(fieldName) must be a string.", name) }
                    declared = typeText
                }
                operation.fields.append(RawField(name: fieldName, value: value, declaredType: declared))
            }
        }
        if let keys = object["desiredKeys"], !keys.isNull {
            guard let parsed = RecordOperation.parseDesiredKeys(keys) else { return fail("desiredKeys must be an array of field names.", name) }
            operation.desiredKeys = parsed
        }
        return .success(operation)
    }
}
