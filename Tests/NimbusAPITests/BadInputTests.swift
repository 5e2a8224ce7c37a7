import Foundation
import NimbusSupport
import Testing

/// Bad input (was the curl scenario 33, first half): every malformed or mistyped request is a 4xx
/// in the error shape {uuid, serverErrorCode, reason} — or a BAD_REQUEST item inside a 200 where the
/// error is about one record — and never a 500. (Names, tokens, addresses and limits:
/// BadInputLimitsTests.)
@Suite struct BadInputTests {
    static let posts = ["records/modify", "records/lookup", "records/query", "records/changes", "zones/lookup", "zones/modify", "zones/changes"]

    /// The request-level error of `answer` is `status` with `code` in the error shape.
    static func expectError(_ answer: Answer, _ status: Int, _ code: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(answer.status == status && answer.serverErrorCode == code && answer.json.isErrorBody, "\(what): \(answer)", sourceLocation: sourceLocation)
    }

    /// A 200 whose only item is the error `code` in the error shape.
    static func expectItem(_ answer: Answer, _ code: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(answer.status == 200 && answer.codes == [code] && answer.records.first?.isErrorBody == true, "\(what): \(answer)", sourceLocation: sourceLocation)
    }

    /// A user with zone Z and record r1 (text, count, when), as the scenario set up.
    static func setUp(_ api: APIFixture) async throws -> (token: String, r1Tag: String) {
        let token = try await api.token()
        _ = await api.modifyZones(token, ["create:Z"])
        let r1 = await api.modify(token, [Op.record("create", "r1", fields: #"{"text":{"value":"hello"},"count":{"value":1},"when":{"value":1795000000000,"type":"TIMESTAMP"}}"#)])
        return (token, try #require(r1.tag("r1"), "\(r1)"))
    }

    @Test func malformedJSONAndBodiesThatAreNotObjectsAre400OnEveryPost() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let token = try await api.token()
            for operation in Self.posts {
                for body in [#"{"operations":["#, #"{"a":1,}"#, #"{"a" 1}"#, "{'a':1}", #"{"a":tru}"#, #"{"a":1}x"#, #"{"a":"\x"}"#, "[]", #""x""#, "42", "null", "true"] {
                    Self.expectError(await api.database(operation, token: token, body), 400, "BAD_REQUEST", "\(operation) with body \(body)")
                }
            }
            let path = "/database/1/\(api.container)/development/private/records/modify"
            Self.expectError(await api.send("POST", path, token: token, bytes: Array(#"{"operations":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)), 400, "BAD_REQUEST", "invalid UTF-8")
            let arrays = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
            Self.expectError(await api.database("records/modify", token: token, arrays), 400, "BAD_REQUEST", "100000 nested arrays")
            let objects = #"{"a":"# + String(repeating: #"{"a":"#, count: 50_000) + "1" + String(repeating: "}", count: 50_001)
            Self.expectError(await api.database("records/query", token: token, objects), 400, "BAD_REQUEST", "50000 nested objects")
        }
    }

    static let wrongTypes: [(String, String, String)] = [
        ("records/modify", "{}", "modify without operations"),
        ("records/modify", #"{"operations":"x"}"#, "operations a string"),
        ("records/modify", #"{"operations":{}}"#, "operations an object"),
        ("records/modify", #"{"operations":[],"zoneID":"Z"}"#, "zoneID a string"),
        ("records/modify", #"{"operations":[],"zoneID":{"zoneName":5}}"#, "zoneName a number"),
        ("records/modify", #"{"operations":[],"zoneID":{}}"#, "zoneID without zoneName"),
        ("records/modify", #"{"operations":[],"atomic":"yes"}"#, "atomic a string"),
        ("records/modify", #"{"operations":[],"desiredKeys":"text"}"#, "desiredKeys a string"),
        ("records/modify", #"{"operations":[],"desiredKeys":[1]}"#, "desiredKeys of numbers"),
        ("records/lookup", "{}", "lookup without records"),
        ("records/lookup", #"{"records":"r1"}"#, "records a string"),
        ("records/lookup", #"{"records":[{"recordName":5}]}"#, "recordName a number"),
        ("records/lookup", #"{"records":["r1"]}"#, "records of strings"),
        ("records/query", "{}", "query without query"),
        ("records/query", #"{"query":[]}"#, "query an array"),
        ("records/query", #"{"query":{}}"#, "query without recordType"),
        ("records/query", #"{"query":{"recordType":5}}"#, "recordType a number"),
        ("records/query", #"{"query":{"recordType":"Note","filterBy":{}}}"#, "filterBy an object"),
        ("records/query", #"{"query":{"recordType":"Note","sortBy":"text"}}"#, "sortBy a string"),
        ("records/query", #"{"query":{"recordType":"Note","sortBy":[{"fieldName":"text","ascending":"yes"}]}}"#, "ascending a string"),
        ("records/query", #"{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"EQUALS"}]}}"#, "filter without fieldValue"),
        ("records/query", #"{"query":{"recordType":"Note","filterBy":[{"fieldName":"count","comparator":"EQUALS","fieldValue":{"value":"one"}}]}}"#, "filter value of the wrong type"),
        ("records/query", #"{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"IN","fieldValue":{"value":"hello"}}]}}"#, "IN with a scalar"),
        ("records/query", #"{"query":{"recordType":"Note"},"resultsLimit":"7"}"#, "resultsLimit a string"),
        ("records/query", #"{"query":{"recordType":"Note"},"resultsLimit":1.5}"#, "resultsLimit a fraction"),
        ("records/query", #"{"query":{"recordType":"Note"},"continuationMarker":5}"#, "continuationMarker a number"),
        ("records/query", #"{"query":{"recordType":"Note"},"continuationMarker":"bm90IGEgbWFya2Vy"}"#, "forged continuationMarker"),
        ("records/changes", "{}", "changes without zoneID"),
        ("records/changes", #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":5}"#, "syncToken a number"),
        ("records/changes", #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":""}"#, "syncToken empty"),
        ("records/changes", #"{"zoneID":{"zoneName":"_defaultZone"},"resultsLimit":"7"}"#, "changes resultsLimit a string"),
        ("records/changes", #"{"zoneID":{"zoneName":"_defaultZone"},"desiredRecordTypes":"Note"}"#, "desiredRecordTypes a string"),
        ("records/changes", #"{"zoneID":{"zoneName":"_defaultZone"},"desiredKeys":{}}"#, "changes desiredKeys an object"),
        ("zones/lookup", "{}", "zones/lookup without zones"),
        ("zones/lookup", #"{"zones":"Z"}"#, "zones a string"),
        ("zones/lookup", #"{"zones":[5]}"#, "zones of numbers"),
        ("zones/modify", "{}", "zones/modify without operations"),
        ("zones/modify", #"{"operations":"x"}"#, "zones/modify operations a string"),
        ("zones/changes", #"{"syncToken":5}"#, "zones/changes syncToken a number"),
        ("zones/changes", #"{"resultsLimit":"x"}"#, "zones/changes resultsLimit a string"),
        // Unknown comparators are the request's error.
        ("records/query", #"{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"LIKE","fieldValue":{"value":"h%"}}]}}"#, "comparator LIKE"),
        ("records/query", #"{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"equals","fieldValue":{"value":"hello"}}]}}"#, "comparator in lower case"),
        ("records/query", #"{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":5,"fieldValue":{"value":"hello"}}]}}"#, "comparator a number"),
    ]

    @Test func wrongTopLevelFieldTypesAndUnknownComparatorsAre400() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let (token, _) = try await Self.setUp(api)
            for (operation, body, what) in Self.wrongTypes {
                Self.expectError(await api.database(operation, token: token, body), 400, "BAD_REQUEST", what)
            }
        }
    }

    @Test func anUnknownOperationTypeIsAnItemNamingItBesideASavedOperation() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            let answer = await api.database("records/modify", token: token, #"""
                {"operations":[{"operationType":"upsert","record":{"recordName":"u1","recordType":"Note"}},
                 {"operationType":"create","record":{"recordName":"u2","recordType":"Note","fields":{"text":{"value":"fine"}}}}]}
                """#)
            #expect(answer.codes == ["BAD_REQUEST", "ok"] && answer.records.first?.isErrorBody == true, "\(answer)")
            #expect(answer.records.first?["reason"]?.stringValue?.contains("upsert") == true, "\(answer)")
        }
    }

    static let malformedOperations: [(String, String)] = [
        (#""create""#, "an operation that is a string"),
        (#"{"record":{"recordName":"m1","recordType":"Note"}}"#, "no operationType"),
        (#"{"operationType":5,"record":{"recordName":"m1","recordType":"Note"}}"#, "operationType a number"),
        (#"{"operationType":"create"}"#, "no record"),
        (#"{"operationType":"create","record":"m1"}"#, "record a string"),
        (#"{"operationType":"create","record":{"recordName":5,"recordType":"Note"}}"#, "recordName a number"),
        (#"{"operationType":"create","record":{"recordName":"m1"}}"#, "create without recordType"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"1Note"}}"#, "recordType starting with a digit"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"No-te"}}"#, "recordType with a dash"),
        (#"{"operationType":"update","record":{"recordName":"r1","fields":{"text":{"value":"x"}}}}"#, "update without recordChangeTag"),
        (#"{"operationType":"delete","record":{"recordName":"r1"}}"#, "delete without recordChangeTag"),
        (#"{"operationType":"update","record":{"recordName":"r1","recordChangeTag":5}}"#, "recordChangeTag a number"),
        (#"{"operationType":"update","record":{"recordChangeTag":"1"}}"#, "update without recordName"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":[]}}"#, "fields an array"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"text":"x"}}}"#, "field not an object"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"text":{"type":"STRING"}}}}"#, "field without value"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"text":{"value":"x","type":5}}}}"#, "field type a number"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"text":{"value":"x","type":"VARCHAR"}}}}"#, "unknown field type"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"_x":{"value":"x"}}}}"#, "field name starting with _"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"a-b":{"value":"x"}}}}"#, "field name with a dash"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"blob":{"value":{"a":1}}}}}"#, "untyped object value"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"flag":{"value":true}}}}"#, "untyped boolean value"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"list":{"value":[]}}}}"#, "untyped empty list"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"mixed":{"value":[1,"a"]}}}}"#, "untyped mixed list"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"count":{"value":1.5}}}}"#, "INT64 field with a fraction"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"b":{"value":"***","type":"BYTES"}}}}"#, "BYTES not base64"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"d":{"value":"1.5","type":"DOUBLE"}}}}"#, "DOUBLE given a string"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"l":{"value":["a",1],"type":"STRING_LIST"}}}}"#, "STRING_LIST with a number"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"l":{"value":"a","type":"STRING_LIST"}}}}"#, "STRING_LIST given a string"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"ref":{"value":{"action":"NONE"},"type":"REFERENCE"}}}}"#, "REFERENCE without recordName"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"ref":{"value":{"recordName":"r1","action":"CASCADE"},"type":"REFERENCE"}}}}"#, "REFERENCE with an unknown action"),
        (#"{"operationType":"create","record":{"recordName":"m1","recordType":"Note","fields":{"ref":{"value":"r1","type":"REFERENCE"}}}}"#, "REFERENCE given a string"),
    ]

    @Test func malformedOperationsAreBadRequestItemsAndNothingIsSaved() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let (token, _) = try await Self.setUp(api)
            for (operation, what) in Self.malformedOperations {
                Self.expectItem(await api.database("records/modify", token: token, #"{"operations":[\#(operation)]}"#), "BAD_REQUEST", what)
            }
            // Numbers out of range may be refused by the JSON parser (400) or as the record's item.
            for number in ["1e999", "-1e999", "9223372036854775808", "-9223372036854775809", "123456789012345678901234567890"] {
                let answer = await api.modify(token, [Op.record("create", "m1", fields: #"{"count":{"value":\#(number)}}"#)])
                if answer.status == 400 {
                    Self.expectError(answer, 400, "BAD_REQUEST", number)
                } else {
                    #expect(answer.status == 200 && answer.codes == ["BAD_REQUEST"], "INT64 field given \(number): \(answer)")
                }
            }
            #expect(await api.lookup(token, ["m1"]).codes == ["NOT_FOUND"], "m1 saved by a malformed operation")
            // A REFERENCE names a record: its recordName (and zoneName) follow the naming rules.
            for reference in [#"{"recordName":"bad name","action":"NONE"}"#, #"{"recordName":"","action":"NONE"}"#,
                              #"{"recordName":"\#(String(repeating: "r", count: 256))","action":"NONE"}"#,
                              #"{"recordName":"r1","zoneID":{"zoneName":"bad zone"},"action":"NONE"}"#] {
                let answer = await api.modify(token, [Op.record("create", "m-ref", fields: #"{"ref":{"value":\#(reference),"type":"REFERENCE"}}"#)])
                #expect(answer.codes == ["BAD_REQUEST"], "a REFERENCE to an invalid name was accepted: \(reference.prefix(80)) → \(answer)")
                if answer.codes == ["ok"] { _ = await api.modify(token, [Op.delete("m-ref")]) }
            }
        }
    }

    @Test func wrongTypeReasonsNameTheRecordFieldAndBothTypes() async throws {
        try await APIFixture.with { api in
            let (token, _) = try await Self.setUp(api)
            for (name, fields, words) in [("typed-1", #"{"when":{"value":"yesterday"}}"#, ["typed-1", "when", "TIMESTAMP", "string"]),
                                          ("typed-2", #"{"count":{"value":"7"}}"#, ["typed-2", "count", "INT64", "string"]),
                                          ("typed-3", #"{"text":{"value":5,"type":"INT64"}}"#, ["typed-3", "text", "STRING", "INT64"])] {
                let answer = await api.modify(token, [Op.record("forceUpdate", name, fields: fields)])
                #expect(answer.codes == ["BAD_REQUEST"], "\(answer)")
                let reason = answer.records.first?["reason"]?.stringValue ?? ""
                for word in words { #expect(reason.contains(word), "the wrong-type reason does not name '\(word)': \(reason)") }
            }
        }
    }
}
