import Foundation
import NimbusCore
import NimbusSupport
import Testing

/// Record rules through the API in-process, over a real database: change-tag conflicts and
/// docs/api.md "Ambiguous input is refused, never guessed". (What needs the binary and raw bytes,
/// such as two Authorization fields or absolute-form targets, stays in the curl scenarios.)
@Suite struct RecordRulesTests {
    private static func create(_ name: String, type: String = "Counter", fields: String) -> String {
        #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"\#(type)","fields":\#(fields)}}]}"#
    }

    private static func write(_ kind: String, _ name: String, tag: String, owner: String, round: Int) -> String {
        #"{"operations":[{"operationType":"\#(kind)","record":{"recordName":"\#(name)","recordType":"Counter","recordChangeTag":"\#(tag)","#
            + #""fields":{"owner":{"value":"\#(owner)"},"round":{"value":\#(round)}}}}]}"#
    }

    /// The one item of a `records/modify` answer.
    private static func item(_ answer: Answer) throws -> JSONValue {
        let items = answer.items("records")
        try #require(answer.status == 200 && items.count == 1, "\(answer)")
        return items[0]
    }

    @Test func racingUpdatesFromOneTagHaveOneWinnerAndTheLoserGetsTheWinnersRecord() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            var tag = try Self.item(await api.database("records/modify", token: mac, Self.create("shared", fields: #"{"owner":{"value":"nobody"}}"#)))["recordChangeTag"]?.stringValue ?? ""
            for round in 1...12 {
                let kind = round % 4 == 0 ? "replace" : "update"
                let macBody = Self.write(kind, "shared", tag: tag, owner: "mac", round: round)
                let phoneBody = Self.write(kind, "shared", tag: tag, owner: "phone", round: round)
                async let macAnswer = api.database("records/modify", token: mac, macBody)
                async let phoneAnswer = api.database("records/modify", token: phone, phoneBody)
                let answers = [("mac", try Self.item(await macAnswer)), ("phone", try Self.item(await phoneAnswer))]
                let winners = answers.filter { $0.1["serverErrorCode"] == nil }, losers = answers.filter { $0.1["serverErrorCode"] != nil }
                try #require(winners.count == 1 && losers.count == 1, "round \(round): \(answers)")
                let (winner, won) = winners[0], lost = losers[0].1
                #expect(lost["serverErrorCode"]?.stringValue == "CONFLICT")
                let newTag = won["recordChangeTag"]?.stringValue ?? ""
                #expect(!newTag.isEmpty && newTag != tag)
                let serverRecord = lost["serverRecord"]
                #expect(serverRecord?["recordChangeTag"]?.stringValue == newTag, "round \(round): \(lost)")
                #expect(serverRecord?["fields"]?["owner"]?["value"]?.stringValue == winner)
                #expect(serverRecord?["fields"]?["round"]?["value"] == .integer(Int64(round)))
                #expect(serverRecord?["modified"]?["deviceID"]?.stringValue == winner)
                let stored = await api.database("records/lookup", token: phone, #"{"records":[{"recordName":"shared"}]}"#).items("records").first
                #expect(stored?["recordChangeTag"]?.stringValue == newTag)
                tag = newTag
            }
            // The loser retries from the serverRecord's tag and wins; a stale delete is a CONFLICT;
            // forceUpdate ignores the tag.
            let retry = try Self.item(await api.database("records/modify", token: phone, Self.write("update", "shared", tag: tag, owner: "retry", round: 99)))
            #expect(retry["serverErrorCode"] == nil, "\(retry)")
            let staleDelete = try Self.item(await api.database("records/modify", token: mac,
                #"{"operations":[{"operationType":"delete","record":{"recordName":"shared","recordChangeTag":"\#(tag)"}}]}"#))
            #expect(staleDelete["serverErrorCode"]?.stringValue == "CONFLICT" && staleDelete["serverRecord"]?["recordName"]?.stringValue == "shared")
            let forced = try Self.item(await api.database("records/modify", token: mac, Self.write("forceUpdate", "shared", tag: tag, owner: "forced", round: 100)))
            #expect(forced["serverErrorCode"] == nil, "\(forced)")
        }
    }

    @Test func racingCreatesOfOneNameAgreeWhenEqualAndOtherwiseOneExists() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            for round in 1...4 {
                let same = Self.create("same-\(round)", fields: #"{"round":{"value":\#(round)}}"#)
                async let first = api.database("records/modify", token: mac, same)
                async let second = api.database("records/modify", token: phone, same)
                let (a, b) = (try Self.item(await first), try Self.item(await second))
                #expect(a["serverErrorCode"] == nil && b["serverErrorCode"] == nil, "\(a) / \(b)")
                #expect(a["recordChangeTag"] == b["recordChangeTag"], "identical creates answered two tags")
                async let macCreate = api.database("records/modify", token: mac, Self.create("new-\(round)", fields: #"{"owner":{"value":"mac"}}"#))
                async let phoneCreate = api.database("records/modify", token: phone, Self.create("new-\(round)", fields: #"{"owner":{"value":"phone"}}"#))
                let codes = [try Self.item(await macCreate), try Self.item(await phoneCreate)].map { $0["serverErrorCode"]?.stringValue ?? "ok" }
                #expect(codes.sorted() == ["EXISTS", "ok"], "round \(round): \(codes)")
            }
        }
    }

    @Test func aNewUsersFirstRequestsFromEightDevicesShareOneDatabase() async throws {
        try await APIFixture.with { api in
            var tokens: [String] = []
            for device in 1...8 { tokens.append(try await api.token(user: "bob", device: "device-\(device)")) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, token) in tokens.enumerated() {
                    group.addTask {
                        let item = try Self.item(await api.database("records/modify", token: token, Self.create("first-\(index + 1)", type: "Hello", fields: "{}")))
                        #expect(item["serverErrorCode"] == nil, "\(item)")
                    }
                }
                try await group.waitForAll()
            }
            let query = await api.database("records/query", token: tokens[0], #"{"query":{"recordType":"Hello"}}"#)
            #expect(query.items("records").compactMap { $0["recordName"]?.stringValue }.sorted() == (1...8).map { "first-\($0)" })
            let zones = await api.send("GET", "/database/1/\(api.container)/development/private/zones/list", token: tokens[0])
            #expect(zones.items("zones").count == 1, "\(zones)")
        }
    }

    @Test func containersMadeOfDotsAreRefused() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            for container in ["..", "...", "...."] {
                let answer = await api.send("POST", "/database/1/\(container)/development/private/records/query", token: token,
                                            body: #"{"query":{"recordType":"Note"}}"#)
                #expect(answer.status == 400 && answer.serverErrorCode == "BAD_REQUEST", "\(container): \(answer)")
                #expect(answer.reason.contains("Container \"\(container)\""), "\(answer)")
            }
        }
    }

    @Test func aRecordNamingAnotherZoneIsRefusedAloneAndNotWritten() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            _ = await api.database("zones/modify", token: token, #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Work"}}}]}"#)
            let answer = await api.database("records/modify", token: token, """
                {"zoneID":{"zoneName":"Work"},"operations":[
                 {"operationType":"create","record":{"recordName":"z1","recordType":"Note","zoneID":{"zoneName":"_defaultZone"},"fields":{}}},
                 {"operationType":"create","record":{"recordName":"z2","recordType":"Note","zoneID":{"zoneName":"Work"},"fields":{}}},
                 {"operationType":"create","record":{"recordName":"z3","recordType":"Note","fields":{}}}]}
                """)
            #expect(answer.items("records").map { $0["serverErrorCode"]?.stringValue ?? "ok" } == ["BAD_REQUEST", "ok", "ok"], "\(answer)")
            #expect(answer.items("records").first?["reason"]?.stringValue?.contains("names zone _defaultZone, but the request is for zone Work") == true)
            let lookup = await api.database("records/lookup", token: token, #"{"zoneID":{"zoneName":"_defaultZone"},"records":[{"recordName":"z1"}]}"#)
            #expect(lookup.items("records").first?["serverErrorCode"]?.stringValue == "NOT_FOUND", "the refused record was written")
        }
    }

    @Test func fractionalTimestampsAndIntegersPast64BitsAreRefused() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            let answer = await api.database("records/modify", token: token, """
                {"operations":[
                 {"operationType":"create","record":{"recordName":"t1","recordType":"Note","fields":{"when":{"value":1795000000000.5,"type":"TIMESTAMP"}}}},
                 {"operationType":"create","record":{"recordName":"t2","recordType":"Note","fields":{"big":{"value":18446744073709551615}}}},
                 {"operationType":"create","record":{"recordName":"t3","recordType":"Note","fields":{"when":{"value":1795000000000,"type":"TIMESTAMP"},"big":{"value":9223372036854775807}}}}]}
                """)
            let items = answer.items("records")
            #expect(items.map { $0["serverErrorCode"]?.stringValue ?? "ok" } == ["BAD_REQUEST", "BAD_REQUEST", "ok"], "\(answer)")
            #expect(items.first?["reason"]?.stringValue?.contains("whole milliseconds") == true)
            #expect(items.dropFirst().first?["reason"]?.stringValue?.contains("outside 64 bits") == true)
        }
    }

    @Test func aRetentionTimestampInSecondsIsRefusedAndMillisecondsPass() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../deploy/schemas/applocker.json")
            let schema = try ContainerSchema.parseFile(JSONValue.parse(Array(try Data(contentsOf: file))))
            try await api.database.store.schemas.importSchema(schema, environment: .development)
            let seconds = Int64(Date().timeIntervalSince1970)
            let answer = await api.send("POST", "/database/1/\(schema.container)/development/private/records/modify", token: token, body: """
                {"operations":[
                 {"operationType":"create","record":{"recordName":"s1","recordType":"BlockedAppEvent","fields":{"appName":{"value":"Safari"},"timestamp":{"value":\(seconds)}}}},
                 {"operationType":"create","record":{"recordName":"s2","recordType":"BlockedAppEvent","fields":{"appName":{"value":"Safari"},"timestamp":{"value":\(seconds * 1000)}}}}]}
                """)
            let items = answer.items("records")
            #expect(items.map { $0["serverErrorCode"]?.stringValue ?? "ok" } == ["BAD_REQUEST", "ok"], "\(answer)")
            #expect(items.first?["reason"]?.stringValue?.contains("milliseconds since 1970") == true)
        }
    }
}
