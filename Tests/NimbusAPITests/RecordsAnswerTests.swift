import NimbusSupport
import Testing

/// The four record operations answer through one type (`RecordsAnswer`) and one record writer
/// (`RecordWire`): every answer's bytes are the JSON tree of API.md's members in API.md's order,
/// and a record reads the same whether the store wrote it from its row or decoded it first
/// (desiredKeys naming every field take the decoded path).
@Suite struct RecordsAnswerTests {
    /// `value` rebuilt with its members in API.md's order (a member missing from `value` stays
    /// missing), serialized by the JSON tree: equal to an answer's bytes only when the answer
    /// wrote exactly those members in exactly that order.
    private static func ordered(_ value: JSONValue?, _ keys: [String], _ nested: [String: ([String]) ] = [:]) -> JSONValue {
        guard case .object(let object)? = value else { return value ?? .null }
        var result = JSONObject()
        for key in keys {
            guard let member = object[key] else { continue }
            result[key] = nested[key].map { ordered(member, $0) } ?? member
        }
        #expect(Array(result).count == Array(object).count, "members beyond API.md's: \(object.map(\.key))")
        return .object(result)
    }

    private static let stamp = ["timestamp", "userRecordName", "deviceID"]

    private static func record(_ value: JSONValue) -> JSONValue {
        if value["deleted"] == true { return ordered(value, ["recordName", "recordType", "deleted"]) }
        var rebuilt = ordered(value, ["recordName", "recordType", "recordChangeTag", "fields", "created", "modified", "deleted", "zoneID"],
                              ["created": stamp, "modified": stamp, "zoneID": ["zoneName"]])
        if case .object(var object) = rebuilt, case .object(let fields)? = value["fields"] {
            var sorted = JSONObject()
            for name in fields.map(\.key).sorted() { sorted[name] = ordered(fields[name], ["value", "type"]) }
            object["fields"] = .object(sorted)
            rebuilt = .object(object)
        }
        return rebuilt
    }

    private static func item(_ value: JSONValue) -> JSONValue {
        guard value["serverErrorCode"] != nil else { return record(value) }
        var rebuilt = ordered(value, ["recordName", "uuid", "serverErrorCode", "reason", "serverRecord"])
        if case .object(var object) = rebuilt, let server = value["serverRecord"] {
            object["serverRecord"] = record(server)
            rebuilt = .object(object)
        }
        return rebuilt
    }

    /// Expects the answer's bytes to be its members in API.md's order; returns its records.
    @discardableResult
    private static func expectOrdered(_ answer: Answer, _ keys: [String]) -> [JSONValue] {
        #expect(answer.status == 200, "\(answer)")
        var rebuilt = ordered(answer.json, keys, ["zoneID": ["zoneName"]])
        if case .object(var object) = rebuilt {
            object["records"] = .array(answer.items("records").map(item))
            rebuilt = .object(object)
        }
        #expect(String(decoding: answer.body, as: UTF8.self) == rebuilt.serializedString)
        return answer.items("records")
    }

    @Test func theFourOperationsWriteTheirRecordsAlike() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            let modify = await api.database("records/modify", token: token, #"""
                {"operations":[
                 {"operationType":"create","record":{"recordName":"a","recordType":"Note","fields":{"title":{"value":"x \"q\" é"},"n":{"value":3}}}},
                 {"operationType":"create","desiredKeys":["n"],"record":{"recordName":"b","recordType":"Note","fields":{"title":{"value":"y"},"n":{"value":4}}}},
                 {"operationType":"forceDelete","record":{"recordName":"never"}}]}
                """#)
            let saved = Self.expectOrdered(modify, ["records"])
            #expect(saved.count == 3)
            let a = try #require(saved.first)
            let text = String(decoding: modify.body, as: UTF8.self)
            #expect(text.contains(#""fields":{"n":{"value":3,"type":"INT64"},"title":{"value":"x \"q\" é","type":"STRING"}}"#), "\(text)")
            #expect(text.contains(#""fields":{"n":{"value":4,"type":"INT64"}}"#), "desiredKeys: \(text)")
            #expect(text.hasSuffix(#",{"recordName":"never","deleted":true}]}"#))

            // A conflict carries the current record, written as every other answer writes it.
            let conflict = await api.database("records/modify", token: token,
                                              #"{"operations":[{"operationType":"update","record":{"recordName":"a","recordType":"Note","recordChangeTag":"stale","fields":{}}}]}"#)
            let failed = Self.expectOrdered(conflict, ["records"])
            #expect(failed.first?["serverErrorCode"] == "CONFLICT")
            #expect(failed.first?["serverRecord"] == a)

            // Lookup: from the rows (no desiredKeys) and decoded (desiredKeys naming every field): the same bytes.
            let fromRows = await api.database("records/lookup", token: token, #"{"records":[{"recordName":"a"},{"recordName":"missing"},{"recordName":""}]}"#)
            let decoded = await api.database("records/lookup", token: token,
                                             #"{"desiredKeys":["n","title"],"records":[{"recordName":"a"},{"recordName":"missing"},{"recordName":""}]}"#)
            let found = Self.expectOrdered(fromRows, ["records"])
            Self.expectOrdered(decoded, ["records"])
            #expect(found.first == a)
            #expect(found.dropFirst().map { $0["serverErrorCode"]?.stringValue } == ["NOT_FOUND", "BAD_REQUEST"])
            let recordBytes = Array(JSONValue.array([a]).serialized().dropFirst().dropLast())
            #expect(fromRows.body.starts(with: Array(#"{"records":["#.utf8) + recordBytes))
            #expect(decoded.body.starts(with: Array(#"{"records":["#.utf8) + recordBytes))

            // Query, with a continuation marker after the records.
            let query = await api.database("records/query", token: token, #"{"query":{"recordType":"Note"},"resultsLimit":1}"#)
            let queried = Self.expectOrdered(query, ["records", "continuationMarker"])
            #expect(queried.count == 1 && query.json["continuationMarker"]?.stringValue != nil)

            // Changes: the zone first, the token and moreComing after the records; tombstones short.
            let changes = await api.database("records/changes", token: token, #"{"zoneID":{"zoneName":"_defaultZone"}}"#)
            let changed = Self.expectOrdered(changes, ["zoneID", "records", "syncToken", "moreComing"])
            #expect(changed.first == a && changed.count == 2)
            let changesDecoded = await api.database("records/changes", token: token, #"{"zoneID":{"zoneName":"_defaultZone"},"desiredKeys":["n","title"]}"#)
            #expect(changesDecoded.body == changes.body)
            let syncToken = try #require(changes.json["syncToken"]?.stringValue)
            _ = await api.database("records/modify", token: token, #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"b"}}]}"#)
            for keys in ["", #","desiredKeys":["n"]"#] {
                let since = await api.database("records/changes", token: token, #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"\#(syncToken)"\#(keys)}"#)
                Self.expectOrdered(since, ["zoneID", "records", "syncToken", "moreComing"])
                #expect(String(decoding: since.body, as: UTF8.self).hasPrefix(#"{"zoneID":{"zoneName":"_defaultZone"},"records":[{"recordName":"b","recordType":"Note","deleted":true}],"syncToken":""#),
                        "\(since)")
            }
        }
    }
}
