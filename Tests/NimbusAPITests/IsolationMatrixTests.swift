import Foundation
import NimbusHTTP
import NimbusSupport
import Testing

/// The isolation matrix's record, zone and subscription rows (was part of the curl scenario 80):
/// two users, each owning a zone, records, subscriptions, record and zone sync tokens and a query
/// continuation marker. Each sends every such route with the other's names and ids and with a name
/// or id that exists nowhere; the two answers must be identical (status, headers but Date and
/// Content-Length, and the body without uuids, change tags, timestamps and sync tokens, the name
/// swapped for @). Listings mention none of the other's names. (The asset and notification
/// channel rows: `IsolationMatrixAssetTests`.)
@Suite struct IsolationMatrixTests {
    /// One user's objects.
    private struct Objects: Sendable {
        var token = "", tag = "", secretTag = "", defaultToken = "", zoneToken = "", databaseToken = "", marker = ""
    }

    private static func setUp(_ api: APIFixture, _ user: String) async throws -> Objects {
        var o = Objects()
        o.token = try await api.token(user: user)
        _ = await api.modifyZones(o.token, ["create:\(user)-zone"])
        let notes = await api.modify(o.token, [Op.record("create", "\(user)-note", fields: #"{"text":{"value":"\#(user) private"}}"#),
                                               Op.record("create", "\(user)-note2", fields: #"{"text":{"value":"two"}}"#),
                                               Op.record("create", "\(user)-note3", fields: #"{"text":{"value":"three"}}"#)])
        o.tag = try #require(notes.tag("\(user)-note"), "\(notes)")
        o.secretTag = try #require(await api.modify(o.token, zone: "\(user)-zone", [Op.record("create", "\(user)-secret", fields: #"{"text":{"value":"hidden"}}"#)]).tag("\(user)-secret"))
        let subscriptions = await api.database("subscriptions/modify", token: o.token, #"""
            {"operations":[{"operationType":"create","subscription":{"subscriptionID":"\#(user)-sub","subscriptionType":"zone","zoneID":{"zoneName":"\#(user)-zone"},"firesOn":["create"]}},
             {"operationType":"create","subscription":{"subscriptionID":"\#(user)-qsub","subscriptionType":"query","query":{"recordType":"Note"},"notificationInfo":{"title":"\#(user)"}}}]}
            """#)
        try #require(subscriptions.status == 200 && !String(decoding: subscriptions.body, as: UTF8.self).contains("serverErrorCode"), "\(subscriptions)")
        o.defaultToken = try #require(await api.changes(o.token).syncToken)
        o.zoneToken = try #require(await api.changes(o.token, zone: "\(user)-zone").syncToken)
        o.databaseToken = try #require(await api.database("zones/changes", token: o.token).syncToken)
        o.marker = try #require(await api.database("records/query", token: o.token, #"{"query":{"recordType":"Note"},"resultsLimit":1}"#).json["continuationMarker"]?.stringValue)
        return o
    }

    static func forge(_ value: String) -> String {
        var characters = Array(value)
        let i = characters.count / 2
        characters[i] = characters[i] == "A" ? "B" : "A"
        return String(characters)
    }

    /// Status, headers (no Date, Content-Length) and body, with what differs per object taken out.
    static func normalized(_ answer: Answer, _ value: String) -> String {
        let headers = answer.headers.filter { !["date", "content-length"].contains($0.name.lowercased()) }.map { "\($0.name.lowercased()): \($0.value)" }.sorted()
        var body = String(decoding: answer.body, as: UTF8.self)
        for (pattern, replacement) in [(#""uuid":"[^"]*",?"#, ""), (#""recordChangeTag":"[^"]*",?"#, ""), (#""timestamp":[0-9]*,?"#, ""),
                                       (#""syncToken":"[^"]*""#, ##""syncToken":"#""##), (#"\(error id [^)]*\)"#, "")] {
            body = body.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return "\(answer.status)\n\(headers.joined(separator: "\n"))\n\(body)".replacingOccurrences(of: value, with: "@")
    }

    /// The probes of `viewer` against `owner`'s objects; answers the leaks found and the number of checks.
    private static func matrix(_ api: APIFixture, viewer: String, _ v: Objects, owner o: String, _ objects: Objects) async -> (leaks: [String], checks: Int) {
        var leaks: [String] = [], checks = 0
        let m = "nowhere-\(viewer)"
        func probe(_ what: String, _ operation: String, _ template: String, _ foreign: String, _ missing: String, cleanup: (String, String)? = nil) async {
            checks += 1
            var answers: [String] = []
            for value in [foreign, missing] {
                answers.append(normalized(await api.database(operation, token: v.token, template.replacingOccurrences(of: "@", with: value)), value))
                if let (cleanupOperation, cleanupTemplate) = cleanup {
                    _ = await api.database(cleanupOperation, token: v.token, cleanupTemplate.replacingOccurrences(of: "@", with: value))
                }
            }
            if answers[0] != answers[1] { leaks.append("LEAK \(viewer)→\(o) \(what):\n  foreign: \(answers[0].prefix(400))\n  missing: \(answers[1].prefix(400))") }
        }
        func unlisted(_ what: String, _ answer: Answer) {
            checks += 1
            if answer.status != 200 { leaks.append("\(what): status \(answer)") }
            if String(decoding: answer.body, as: UTF8.self).contains("\(o)-") { leaks.append("LEAK \(viewer)→\(o) \(what) mentions \(o)-: \(answer)") }
        }
        await probe("records/lookup name", "records/lookup", #"{"records":[{"recordName":"@"}]}"#, "\(o)-note", "\(m)-note")
        await probe("records/lookup zone", "records/lookup", #"{"zoneID":{"zoneName":"@"},"records":[{"recordName":"\#(o)-secret"}]}"#, "\(o)-zone", "\(m)-zone")
        await probe("records/query zone", "records/query", #"{"zoneID":{"zoneName":"@"},"query":{"recordType":"Note"}}"#, "\(o)-zone", "\(m)-zone")
        await probe("records/query ___recordID", "records/query", #"{"query":{"recordType":"Note","filterBy":[{"fieldName":"___recordID","comparator":"EQUALS","fieldValue":{"value":"@"}}]}}"#, "\(o)-note", "\(m)-note")
        await probe("records/query text", "records/query", #"{"query":{"recordType":"Note","filterBy":[{"fieldName":"text","comparator":"EQUALS","fieldValue":{"value":"@"}}]}}"#, "\(o) private", "\(m) private")
        await probe("records/query continuationMarker", "records/query", #"{"query":{"recordType":"Note"},"continuationMarker":"@"}"#, objects.marker, forge(objects.marker))
        await probe("records/changes zone", "records/changes", #"{"zoneID":{"zoneName":"@"}}"#, "\(o)-zone", "\(m)-zone")
        await probe("records/changes zone, wait", "records/changes", #"{"zoneID":{"zoneName":"@"},"wait":1}"#, "\(o)-zone", "\(m)-zone")
        await probe("records/changes foreign token", "records/changes", #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"@"}"#, objects.defaultToken, forge(objects.defaultToken))
        await probe("records/changes foreign zone token, own zone", "records/changes", #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"@"}"#, objects.zoneToken, forge(objects.zoneToken))
        await probe("records/changes foreign token, foreign zone", "records/changes", #"{"zoneID":{"zoneName":"\#(o)-zone"},"syncToken":"@"}"#, objects.zoneToken, forge(objects.zoneToken))
        for kind in ["update", "replace", "delete"] {
            let operation = Op.record(kind, "@", fields: #"{"text":{"value":"x"}}"#, tag: objects.tag)
            await probe("records/modify \(kind)", "records/modify", #"{"operations":[\#(operation)]}"#, "\(o)-note", "\(m)-note")
            await probe("records/modify atomic \(kind)", "records/modify", #"{"atomic":true,"operations":[\#(operation)]}"#, "\(o)-note", "\(m)-note")
        }
        await probe("records/modify forceDelete", "records/modify", #"{"operations":[\#(Op.delete("@"))]}"#, "\(o)-note", "\(m)-note")
        await probe("records/modify in zone", "records/modify", #"{"zoneID":{"zoneName":"@"},"operations":[\#(Op.record("forceUpdate", "\(o)-secret", fields: #"{"text":{"value":"x"}}"#))]}"#, "\(o)-zone", "\(m)-zone")
        await probe("records/modify DELETE_SELF reference", "records/modify",
                    #"{"operations":[\#(Op.record("create", "\(viewer)-child", "Child", fields: #"{"parent":{"value":{"recordName":"@","action":"DELETE_SELF"},"type":"REFERENCE"}}"#))]}"#, "\(o)-note", "\(m)-note")
        await probe("zones/lookup", "zones/lookup", #"{"zones":[{"zoneName":"@"}]}"#, "\(o)-zone", "\(m)-zone")
        await probe("zones/modify delete", "zones/modify", #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"@"}}}]}"#, "\(o)-zone", "\(m)-zone")
        await probe("zones/changes foreign token", "zones/changes", #"{"syncToken":"@"}"#, objects.databaseToken, forge(objects.databaseToken))
        await probe("zones/changes foreign token, wait", "zones/changes", #"{"syncToken":"@","wait":1}"#, objects.databaseToken, forge(objects.databaseToken))
        await probe("subscriptions/lookup", "subscriptions/lookup", #"{"subscriptions":[{"subscriptionID":"@"}]}"#, "\(o)-sub", "\(m)-sub")
        await probe("subscriptions/modify delete", "subscriptions/modify", #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"@"}}]}"#, "\(o)-sub", "\(m)-sub")
        await probe("subscriptions/modify update", "subscriptions/modify",
                    #"{"operations":[{"operationType":"update","subscription":{"subscriptionID":"@","subscriptionType":"database","firesOn":["create"]}}]}"#, "\(o)-qsub", "\(m)-qsub")
        await probe("subscriptions/modify zone subscription on foreign zone", "subscriptions/modify",
                    #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"\#(viewer)-zsub","subscriptionType":"zone","zoneID":{"zoneName":"@"}}}]}"#, "\(o)-zone", "\(m)-zone",
                    cleanup: ("subscriptions/modify", #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"\#(viewer)-zsub"}}]}"#))
        await probe("assets/upload zone", "assets/upload", #"{"zoneID":{"zoneName":"@"},"tokens":[{"recordType":"Blob","fieldName":"data"}]}"#, "\(o)-zone", "\(m)-zone")

        unlisted("zones/list", await api.getDatabase("zones/list", token: v.token))
        unlisted("subscriptions/list", await api.getDatabase("subscriptions/list", token: v.token))
        unlisted("users/current", await api.getDatabase("users/current", token: v.token))
        unlisted("records/query Note", await api.database("records/query", token: v.token, #"{"query":{"recordType":"Note"}}"#))
        unlisted("records/changes _defaultZone", await api.changes(v.token))
        unlisted("zones/changes", await api.database("zones/changes", token: v.token))

        // Last: probes that create the viewer's own object under the owner's name (cleaned up at once).
        let deleteRecord = ("records/modify", #"{"operations":[\#(Op.delete("@"))]}"#)
        await probe("records/modify create", "records/modify", #"{"operations":[\#(Op.record("create", "@", fields: #"{"text":{"value":"x"}}"#))]}"#, "\(o)-note", "\(m)-new1", cleanup: deleteRecord)
        await probe("records/modify forceUpdate", "records/modify", #"{"operations":[\#(Op.record("forceUpdate", "@", fields: #"{"text":{"value":"x"}}"#))]}"#, "\(o)-note2", "\(m)-new2", cleanup: deleteRecord)
        await probe("records/modify forceReplace", "records/modify", #"{"operations":[\#(Op.record("forceReplace", "@", fields: #"{"text":{"value":"x"}}"#))]}"#, "\(o)-note3", "\(m)-new3", cleanup: deleteRecord)
        await probe("subscriptions/modify create", "subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"@","subscriptionType":"database"}}]}"#,
                    "\(o)-sub", "\(m)-sub2", cleanup: ("subscriptions/modify", #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"@"}}]}"#))
        await probe("zones/modify create", "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"@"}}}]}"#, "\(o)-zone", "\(m)-zone2",
                    cleanup: ("zones/modify", #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"@"}}}]}"#))
        return (leaks, checks)
    }

    @Test func eachUsersRoutesAnswerTheOthersNamesAsNamesThatExistNowhere() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let alice = try await Self.setUp(api, "alice"), bob = try await Self.setUp(api, "bob")
            let bobOnAlice = await Self.matrix(api, viewer: "bob", bob, owner: "alice", alice)
            let aliceOnBob = await Self.matrix(api, viewer: "alice", alice, owner: "bob", bob)
            let leaks = bobOnAlice.leaks + aliceOnBob.leaks
            #expect(leaks.isEmpty, "\(leaks.count) leaks in \(bobOnAlice.checks + aliceOnBob.checks) checks:\n\(leaks.joined(separator: "\n"))")
            #expect(bobOnAlice.checks + aliceOnBob.checks > 70)
            for (user, objects) in [("alice", alice), ("bob", bob)] {
                #expect(await api.lookup(objects.token, ["\(user)-note"]).tag("\(user)-note") == objects.tag, "\(user)-note changed")
                #expect(await api.lookup(objects.token, zone: "\(user)-zone", ["\(user)-secret"]).tag("\(user)-secret") == objects.secretTag, "\(user)-secret changed")
                let subscriptions = await api.database("subscriptions/lookup", token: objects.token, #"{"subscriptions":[{"subscriptionID":"\#(user)-sub"},{"subscriptionID":"\#(user)-qsub"}]}"#)
                let text = String(decoding: subscriptions.body, as: UTF8.self)
                #expect(!text.contains("serverErrorCode") && text.contains(#""subscriptionType":"query""#), "\(user)'s subscriptions changed: \(subscriptions)")
            }
        }
    }
}
