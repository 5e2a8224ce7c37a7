import Foundation
import NimbusHTTP
import NimbusSupport
import Testing

/// Bad input (was the curl scenario 33, second half): names out of range, missing and bad
/// credentials, forged tokens and markers, bad addresses, limits, record-level refusals, and values
/// PostgreSQL cannot hold as given — each a 4xx or an error item in the error shape, never a 500.
@Suite struct BadInputLimitsTests {
    private static func expectError(_ answer: Answer, _ status: Int, _ code: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        BadInputTests.expectError(answer, status, code, what, sourceLocation: sourceLocation)
    }

    @Test func namesUpTo255AreAcceptedAndLongerOrBadOnesRefused() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let (token, _) = try await BadInputTests.setUp(api)
            let name255 = String(repeating: "n", count: 255), name256 = String(repeating: "n", count: 256)
            #expect(await api.modify(token, [Op.record("create", name255, fields: #"{"text":{"value":"long"}}"#),
                                             #"{"operationType":"create","record":{"recordName":"a:b.c_d-9","recordType":"Note"}}"#]).codes == ["ok", "ok"])
            for name in [name256, "a b", "a/b", #"caf\u00e9"#, #"a\"b"#, "a%b", #"a\nb"#] {
                BadInputTests.expectItem(await api.database("records/modify", token: token, #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Note"}}]}"#),
                                         "BAD_REQUEST", "record name '\(name.prefix(20))'")
            }
            #expect(await api.lookup(token, [name256, "a b", name255]).codes == ["BAD_REQUEST", "BAD_REQUEST", "ok"])
            BadInputTests.expectItem(await api.database("records/modify", token: token, #"{"operations":[{"operationType":"create","record":{"recordName":"t1","recordType":"N\#(String(repeating: "t", count: 255))"}}]}"#),
                                     "BAD_REQUEST", "256-character record type")
            BadInputTests.expectItem(await api.modify(token, [Op.record("create", "t1", fields: #"{"f\#(String(repeating: "x", count: 255))":{"value":"x"}}"#)]), "BAD_REQUEST", "256-character field name")
            for zone in [name256, "a b", "", "_private"] {
                let answer = await api.modifyZones(token, ["create:\(zone)"])
                #expect(answer.items("zones").first?["serverErrorCode"]?.stringValue == "BAD_REQUEST" && answer.items("zones").first?.isErrorBody == true, "zone '\(zone.prefix(20))': \(answer)")
            }
            for zone in [name256, "a b", ""] {
                Self.expectError(await api.database("records/modify", token: token, #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[]}"#), 400, "BAD_REQUEST", "records/modify in '\(zone.prefix(20))'")
                Self.expectError(await api.changes(token, zone: zone), 400, "BAD_REQUEST", "records/changes of '\(zone.prefix(20))'")
            }
            let lookup = await api.database("zones/lookup", token: token, #"{"zones":[{"zoneName":"\#(name256)"}]}"#)
            let item = lookup.items("zones").first ?? lookup.json
            #expect(item["serverErrorCode"] != nil && item.isErrorBody, "zones/lookup of a 256-character name answered a zone: \(lookup)")
        }
    }

    @Test func missingMalformedUnknownAndRevokedCredentialsAre401() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let token = try await api.token(device: "mac")
            let other = try await api.issue(device: "phone")
            let path = "/database/1/\(api.container)/development/private/records/lookup"
            Self.expectError(await api.send("POST", path, body: #"{"records":[]}"#), 401, "AUTHENTICATION_REQUIRED", "no Authorization header")
            Self.expectError(await api.send("GET", "/database/1/\(api.container)/development/private/zones/list"), 401, "AUTHENTICATION_REQUIRED", "GET without Authorization")
            for header in ["Basic x", "Basic \(Data("alice:pw".utf8).base64EncodedString())", "Bearer", "Bearer ", "Token \(token)", "bearer-\(token)",
                           "Bearer \(token) extra", "Bearer \(token)x", "Bearer nope"] {
                var headers = HTTPHeaders()
                headers.add(name: "Authorization", value: header)
                Self.expectError(await api.send("POST", path, body: #"{"records":[]}"#, headers: headers), 401, "AUTHENTICATION_FAILED", "Authorization: \(header.prefix(30))")
            }
            #expect(await api.lookup(other.secret, ["r1"]).status == 200)
            try await api.database.store.accounts.revokeToken(tokenID: other.tokenID)
            Self.expectError(await api.lookup(other.secret, ["r1"]), 401, "AUTHENTICATION_FAILED", "a revoked token")
            Self.expectError(await api.getDatabase("zones/list", token: other.secret), 401, "AUTHENTICATION_FAILED", "a revoked token on zones/list")
            #expect(await api.lookup(token, ["r1"]).status == 200, "another token of the user is affected")
        }
    }

    /// `token` with the character at `index` changed.
    private static func flip(_ token: String, _ index: Int) -> String {
        var characters = Array(token)
        characters[index] = characters[index] == "A" ? "B" : "A"
        return String(characters)
    }

    @Test func tamperedTruncatedForeignAndWrongKindTokensAndMarkersAre400() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let (token, _) = try await BadInputTests.setUp(api)
            let defaultToken = try #require(await api.changes(token).syncToken)
            let zToken = try #require(await api.changes(token, zone: "Z").syncToken)
            let databaseToken = try #require(await api.database("zones/changes", token: token).syncToken)
            for bad in [Self.flip(defaultToken, 5), Self.flip(defaultToken, 30), Self.flip(defaultToken, defaultToken.count - 1), String(defaultToken.prefix(20)),
                        defaultToken + "AAAA", "not a token", zToken, databaseToken] {
                Self.expectError(await api.changes(token, syncToken: bad), 400, "BAD_REQUEST", "records/changes with token \(bad.prefix(24))…")
            }
            for bad in [Self.flip(databaseToken, 12), Self.flip(databaseToken, databaseToken.count - 2), defaultToken, "!!!"] {
                Self.expectError(await api.database("zones/changes", token: token, #"{"syncToken":"\#(bad)"}"#), 400, "BAD_REQUEST", "zones/changes with token \(bad.prefix(24))…")
            }
            #expect(await api.changes(token, syncToken: defaultToken).status == 200)
            _ = await api.modify(token, [Op.record("forceUpdate", "q1", fields: #"{"text":{"value":"a"}}"#), Op.record("forceUpdate", "q2", fields: #"{"text":{"value":"b"}}"#)])
            let ascending = #""query":{"recordType":"Note","sortBy":[{"fieldName":"text","ascending":true}]},"resultsLimit":1"#
            let marker = try #require(await api.database("records/query", token: token, "{\(ascending)}").json["continuationMarker"]?.stringValue)
            Self.expectError(await api.database("records/query", token: token, #"{\#(ascending),"continuationMarker":"\#(Self.flip(marker, 3))"}"#), 400, "BAD_REQUEST", "a tampered marker")
            Self.expectError(await api.database("records/query", token: token, #"{"query":{"recordType":"Note","sortBy":[{"fieldName":"text","ascending":false}]},"resultsLimit":1,"continuationMarker":"\#(marker)"}"#),
                             400, "BAD_REQUEST", "a marker of another order")
            Self.expectError(await api.database("records/query", token: token, #"{"zoneID":{"zoneName":"Z"},\#(ascending),"continuationMarker":"\#(marker)"}"#), 400, "BAD_REQUEST", "a marker of another zone")
        }
    }

    @Test func badContainersEnvironmentsDatabasesOperationsMethodsAndShapes() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let token = try await api.token()
            let appLocker = "iCloud.com.mirxa.AppLocker"
            for (container, environment, database) in [("bad!name", "development", "private"), (String(repeating: "c", count: 256), "development", "private"),
                                                       ("bad%20name", "development", "private"), (appLocker, "staging", "private"), (appLocker, "Development", "private"),
                                                       (appLocker, "development", "public"), (appLocker, "development", "shared"), (appLocker, "development", "other")] {
                Self.expectError(await api.send("POST", "/database/1/\(container)/\(environment)/\(database)/records/lookup", token: token, body: #"{"records":[]}"#),
                                 400, "BAD_REQUEST", "\(container.prefix(30)) / \(environment) / \(database)")
            }
            #expect(await api.send("POST", "/database/1/\(String(repeating: "c", count: 255))/development/private/records/lookup", token: token, body: #"{"records":[]}"#).status == 200)
            for operation in ["records/frobnicate", "foo/bar", "zones/create", "users/list", "records/MODIFY"] {
                Self.expectError(await api.database(operation, token: token), 400, "BAD_REQUEST", "unknown operation \(operation)")
            }
            for (method, operation) in [("GET", "records/modify"), ("GET", "records/changes"), ("POST", "zones/list"), ("POST", "users/current"),
                                        ("PUT", "records/modify"), ("DELETE", "zones/list"), ("PATCH", "records/query")] {
                let answer = await api.send(method, "/database/1/\(api.container)/development/private/\(operation)", token: token, body: "{}")
                Self.expectError(answer, 405, "BAD_REQUEST", "\(method) \(operation)")
                #expect(answer.headers["Allow"]?.isEmpty == false, "\(method) \(operation): 405 without Allow")
            }
            for path in ["/database/1/\(appLocker)/development/private/records", "/database/1/\(appLocker)/development/private/records/modify/extra",
                         "/database/2/\(appLocker)/development/private/records/modify", "/database/1/\(appLocker)/development/records/modify", "/database", "/database/1"] {
                Self.expectError(await api.send("POST", path, token: token, body: "{}"), 404, "NOT_FOUND", "path \(path)")
            }
        }
    }

    private static func bulk(_ count: Int, _ prefix: String) -> String {
        #"{"operations":["# + (0..<count).map { Op.record("forceUpdate", "\(prefix)-\($0)", "Bulk", fields: #"{"n":{"value":\#($0)}}"#) }.joined(separator: ",") + "]}"
    }

    @Test func operationsPerRequestResultsLimitsWaitAndRecordSizeAreBounded() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let token = try await api.token()
            Self.expectError(await api.modify(token, [#"{"operationType":"forceUpdate","record":{"recordName":"d1","recordType":"Note"}}"#, Op.delete("d1")]), 400, "BAD_REQUEST", "two operations on one record")
            Self.expectError(await api.modify(token, [#"{"operationType":"forceUpdate","record":{"recordName":"d2","recordType":"Note"}}"#,
                                                      #"{"operationType":"create","record":{"recordName":"d3","recordType":"Note"}}"#,
                                                      #"{"operationType":"create","record":{"recordName":"d2","recordType":"Note"}}"#]), 400, "BAD_REQUEST", "two operations on one record, apart")
            #expect(await api.lookup(token, ["d1", "d2", "d3"]).codes == ["NOT_FOUND", "NOT_FOUND", "NOT_FOUND"])
            let over = await api.database("records/modify", token: token, Self.bulk(401, "over"))
            Self.expectError(over, 413, "LIMIT_EXCEEDED", "401 operations")
            #expect(over.reason.contains("400"), "the 413 reason does not name the limit: \(over)")
            #expect(await api.database("records/modify", token: token, Self.bulk(400, "edge")).codes == Array(repeating: "ok", count: 400))
            #expect(await api.lookup(token, ["over-0", "edge-399"]).codes == ["NOT_FOUND", "ok"])
            Self.expectError(await api.lookup(token, (0..<401).map { "edge-\($0)" }), 413, "LIMIT_EXCEEDED", "lookup of 401 records")

            for (operation, base) in [("records/query", #""query":{"recordType":"Bulk"}"#), ("records/changes", #""zoneID":{"zoneName":"_defaultZone"}"#), ("zones/changes", #""x":0"#)] {
                for limit in ["0", "-1", #""10""#] {
                    Self.expectError(await api.database(operation, token: token, #"{\#(base),"resultsLimit":\#(limit)}"#), 400, "BAD_REQUEST", "\(operation) resultsLimit \(limit)")
                }
                for limit in ["null", "1", "100000"] {
                    #expect(await api.database(operation, token: token, #"{\#(base),"resultsLimit":\#(limit)}"#).status == 200, "\(operation) resultsLimit \(limit)")
                }
            }
            let query = await api.database("records/query", token: token, #"{"query":{"recordType":"Bulk"},"resultsLimit":1000}"#)
            #expect(query.records.count == 400 && query.json["continuationMarker"] == nil, "resultsLimit 1000: \(query.records.count) records")
            _ = await api.modify(token, [Op.record("forceUpdate", "one-more", fields: #"{"text":{"value":"x"}}"#)])
            let changes = await api.changes(token, limit: 1000)
            #expect(changes.records.count == 400 && changes.moreComing == true, "changes resultsLimit 1000: \(changes.records.count) records")

            for (operation, base) in [("records/changes", #""zoneID":{"zoneName":"_defaultZone"}"#), ("zones/changes", #""x":0"#)] {
                for wait in ["56", "-1", "1.5", #""5""#, "100000000000"] {
                    Self.expectError(await api.database(operation, token: token, #"{\#(base),"wait":\#(wait)}"#), 400, "BAD_REQUEST", "\(operation) wait \(wait)")
                }
            }
            // wait applies only when the answer would be empty: these answer at once.
            let start = Date()
            #expect(await api.changes(token, limit: 5, extra: #","wait":55"#).records.isEmpty == false)
            #expect(await api.database("zones/changes", token: token, #"{"wait":55}"#).status == 200)
            #expect(Date().timeIntervalSince(start) < 5, "wait 55 with changes to answer took \(Date().timeIntervalSince(start)) s")

            let huge = await api.modify(token, [Op.record("forceUpdate", "huge", fields: #"{"text":{"value":"\#(String(repeating: "x", count: 1_100_000))"}}"#)])
            BadInputTests.expectItem(huge, "LIMIT_EXCEEDED", "a record over 1 MiB")
        }
    }

    @Test func recordLevelRefusalsAreItemsAndAFailedAtomicRequestSavesNothing() async throws {
        try await APIFixture.with { api in
            let (token, r1Tag) = try await BadInputTests.setUp(api)
            BadInputTests.expectItem(await api.modify(token, [Op.record("update", "missing", fields: #"{"text":{"value":"x"}}"#, tag: "1")]), "NOT_FOUND", "update of a missing record")
            BadInputTests.expectItem(await api.modify(token, [Op.delete("missing", tag: "1")]), "NOT_FOUND", "delete of a missing record")
            BadInputTests.expectItem(await api.modify(token, [Op.record("create", "r1", fields: #"{"text":{"value":"other"}}"#)]), "EXISTS", "create of an existing record with other content")
            BadInputTests.expectItem(await api.modify(token, [Op.record("update", "r1", "Other", tag: r1Tag)]), "BAD_REQUEST", "update changing the record type")
            BadInputTests.expectItem(await api.modify(token, [Op.record("create", "child", fields: #"{"parent":{"value":{"recordName":"nobody","action":"DELETE_SELF"},"type":"REFERENCE"}}"#)]),
                                     "VALIDATING_REFERENCE_ERROR", "DELETE_SELF to a missing record")
            BadInputTests.expectItem(await api.modify(token, [Op.record("create", "child", fields: #"{"parent":{"value":{"recordName":"r1","zoneID":{"zoneName":"Z"},"action":"DELETE_SELF"},"type":"REFERENCE"}}"#)]),
                                     "VALIDATING_REFERENCE_ERROR", "DELETE_SELF to another zone")
            let atomic = await api.database("records/modify", token: token, #"""
                {"atomic":true,"operations":[{"operationType":"create","record":{"recordName":"at1","recordType":"Note","fields":{"text":{"value":"a"}}}},
                 {"operationType":"update","record":{"recordName":"r1","recordChangeTag":"zzzz","fields":{"text":{"value":"b"}}}},{"operationType":"upsert","record":{"recordName":"at3"}}]}
                """#)
            #expect(atomic.codes == ["ATOMIC_ERROR", "CONFLICT", "BAD_REQUEST"], "\(atomic)")
            let after = await api.lookup(token, ["at1", "r1"])
            #expect(after.codes == ["NOT_FOUND", "ok"] && after.tag("r1") == r1Tag, "the failed atomic request saved something: \(after)")
        }
    }

    @Test func nulCharactersAndTimestampsBeyondPostgresAreStoredAsSentOrRefused() async throws {
        try await APIFixture.with { api in
            try await api.importSchema("applocker.json")
            let (token, _) = try await BadInputTests.setUp(api)
            for (name, fields) in [("text", #"{"text":{"value":"a\u0000b"}}"#), ("list", #"{"list":{"value":["a\u0000"],"type":"STRING_LIST"}}"#),
                                   ("ref", #"{"ref":{"value":{"recordName":"a\u0000","action":"NONE"},"type":"REFERENCE"}}"#)] {
                let answer = await api.modify(token, [Op.record("create", "nul-\(name)", fields: fields)])
                #expect(answer.status == 200 && ["ok", "BAD_REQUEST"].contains(answer.codes.first ?? ""), "\(name): \(answer)")
                if answer.codes == ["ok"] { #expect(String(decoding: answer.body, as: UTF8.self).contains(#"\u0000"#), "stored but not returned as sent: \(answer)") }
            }
            for filter in [#"{"fieldName":"text","comparator":"EQUALS","fieldValue":{"value":"a\u0000b"}}"#, #"{"fieldName":"text","comparator":"BEGINS_WITH","fieldValue":{"value":"\u0000"}}"#,
                           #"{"fieldName":"text","comparator":"IN","fieldValue":{"value":["a\u0000"]}}"#, #"{"fieldName":"___recordID","comparator":"EQUALS","fieldValue":{"value":"a\u0000"}}"#,
                           #"{"fieldName":"___recordID","comparator":"IN","fieldValue":{"value":["r1","a\u0000"]}}"#] {
                let answer = await api.database("records/query", token: token, #"{"query":{"recordType":"Note","filterBy":[\#(filter)]}}"#)
                switch answer.status {
                case 200: #expect(!answer.names.contains("r1") || filter.contains(#""r1""#), "filter \(filter) matched r1")
                case 400: Self.expectError(answer, 400, "BAD_REQUEST", filter)
                default: Issue.record("records/query with \\u0000 in \(filter): \(answer)")
                }
            }
            for ts in ["-9000000000000000", "-9223372036854775808"] {
                let answer = await api.modify(token, [Op.record("create", "old-\(ts.dropFirst().prefix(4))", "BlockedAppEvent", fields: #"{"appName":{"value":"x"},"timestamp":{"value":\#(ts)}}"#)],
                                            container: "iCloud.com.mirxa.AppLocker")
                #expect(answer.status == 200 && ["ok", "BAD_REQUEST"].contains(answer.codes.first ?? ""), "timestamp \(ts): \(answer)")
            }
        }
    }
}
