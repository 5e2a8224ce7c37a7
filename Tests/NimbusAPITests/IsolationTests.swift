import Foundation
import NimbusSupport
import Testing

/// Isolation (was the curl scenario 31): a second user's token sees none of the first user's
/// zones, records or changes, and every route answers it exactly as it answers names that do not
/// exist (same status, same serverErrorCode, same reason once the name is swapped).
@Suite struct IsolationTests {
    /// Alice's data and her tokens: records in _defaultZone and in her zone Secrets.
    private struct Alice {
        let token: String, noteTag: String, defaultToken: String, secretsToken: String, databaseToken: String
    }

    private static func alice(_ api: APIFixture) async throws -> Alice {
        let token = try await api.token(user: "alice")
        _ = await api.modifyZones(token, ["create:Secrets"])
        let note = await api.modify(token, [Op.record("create", "alice-note", fields: #"{"text":{"value":"alice only"}}"#)])
        let secret = await api.modify(token, zone: "Secrets", [Op.record("create", "alice-secret", fields: #"{"text":{"value":"hidden"}}"#)])
        try #require(note.codes == ["ok"] && secret.codes == ["ok"], "\(note) / \(secret)")
        return Alice(token: token, noteTag: try #require(note.tag("alice-note")),
                     defaultToken: try #require(await api.changes(token).syncToken),
                     secretsToken: try #require(await api.changes(token, zone: "Secrets").syncToken),
                     databaseToken: try #require(await api.database("zones/changes", token: token).syncToken))
    }

    /// Bob's answer to `body` with `@` as alice's `foreign` name equals his answer with a `missing`
    /// one (uuids removed, the name swapped for @); returns that answer as `STATUS BODY`.
    private static func sameAsMissing(_ api: APIFixture, _ bob: String, _ operation: String, foreign: String, missing: String, _ body: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) async -> String {
        func normalized(_ answer: Answer, _ name: String) -> String {
            let text = String(decoding: answer.body, as: UTF8.self)
                .replacingOccurrences(of: #""uuid":"[^"]*",?"#, with: "", options: .regularExpression)
                .replacingOccurrences(of: name, with: "@")
            return "\(answer.status) \(text)"
        }
        let a = normalized(await api.database(operation, token: bob, body.replacingOccurrences(of: "@", with: foreign)), foreign)
        let b = normalized(await api.database(operation, token: bob, body.replacingOccurrences(of: "@", with: missing)), missing)
        #expect(a == b, "\(operation): alice's \(foreign) answers differently from a missing name", sourceLocation: sourceLocation)
        return a
    }

    /// `token` with one character in its middle changed.
    private static func forged(_ token: String) -> String {
        var characters = Array(token)
        characters[20] = characters[20] == "A" ? "B" : "A"
        return String(characters)
    }

    @Test func bobsRecordRequestsWithAlicesNamesAnswerAsMissingNames() async throws {
        try await APIFixture.with { api in
            let alice = try await Self.alice(api)
            let bob = try await api.token(user: "bob")
            #expect(await Self.sameAsMissing(api, bob, "records/lookup", foreign: "alice-note", missing: "no-such-note", #"{"records":[{"recordName":"@"}]}"#)
                .hasPrefix("200 ") == true)
            let zoneLookup = await Self.sameAsMissing(api, bob, "records/lookup", foreign: "Secrets", missing: "NoSuchZone",
                                                      #"{"zoneID":{"zoneName":"@"},"records":[{"recordName":"alice-secret"}]}"#)
            #expect(zoneLookup.hasPrefix("404 ") && zoneLookup.contains(#""serverErrorCode":"ZONE_NOT_FOUND""#), "\(zoneLookup)")
            for kind in ["update", "replace", "delete"] {
                let got = await Self.sameAsMissing(api, bob, "records/modify", foreign: "alice-note", missing: "no-such-note",
                                                   #"{"operations":[\#(Op.record(kind, "@", fields: #"{"text":{"value":"bob was here"}}"#, tag: alice.noteTag))]}"#)
                #expect(got.hasPrefix("200 ") && got.contains(#""serverErrorCode":"NOT_FOUND""#), "\(kind): \(got)")
            }
            let forceDelete = await Self.sameAsMissing(api, bob, "records/modify", foreign: "alice-note", missing: "no-such-note", #"{"operations":[\#(Op.delete("@"))]}"#)
            #expect(forceDelete == #"200 {"records":[{"recordName":"@","deleted":true}]}"#)
            let inZone = await Self.sameAsMissing(api, bob, "records/modify", foreign: "Secrets", missing: "NoSuchZone",
                                                  #"{"zoneID":{"zoneName":"@"},"operations":[\#(Op.record("forceUpdate", "alice-secret", fields: #"{"text":{"value":"bob"}}"#))]}"#)
            #expect(inZone.hasPrefix("404 ") && inZone.contains("ZONE_NOT_FOUND"), "\(inZone)")
            // Bob's create under alice's name makes his own record, not EXISTS.
            #expect(await api.modify(bob, [Op.record("create", "alice-note", fields: #"{"text":{"value":"bob own"}}"#)]).codes == ["ok"])
            _ = await api.modify(bob, [Op.delete("alice-note")])
            #expect(await api.database("records/query", token: bob, #"{"query":{"recordType":"Note"}}"#).names.isEmpty)
            let query = await Self.sameAsMissing(api, bob, "records/query", foreign: "Secrets", missing: "NoSuchZone", #"{"zoneID":{"zoneName":"@"},"query":{"recordType":"Note"}}"#)
            #expect(query.hasPrefix("404 ") && query.contains("ZONE_NOT_FOUND"), "\(query)")
            try await Self.expectAliceUntouched(api, alice)
        }
    }

    @Test func alicesZonesAndTokensAnswerBobAsMissingOrForgedOnes() async throws {
        try await APIFixture.with { api in
            let alice = try await Self.alice(api)
            let bob = try await api.token(user: "bob")
            let feed = await api.changes(bob)
            #expect(feed.summary.isEmpty, "bob's _defaultZone changes carry \(feed.summary)")
            let bobDefaultToken = try #require(feed.syncToken)
            let changes = await Self.sameAsMissing(api, bob, "records/changes", foreign: "Secrets", missing: "NoSuchZone", #"{"zoneID":{"zoneName":"@"}}"#)
            #expect(changes.hasPrefix("404 ") && changes.contains("ZONE_NOT_FOUND"), "\(changes)")
            // A token is bound to its database and zone: alice's is refused as a forged one is.
            let foreignToken = await Self.sameAsMissing(api, bob, "records/changes", foreign: alice.defaultToken, missing: Self.forged(alice.defaultToken),
                                                        #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"@"}"#)
            #expect(foreignToken.hasPrefix("400 ") && foreignToken.contains("BAD_REQUEST"), "\(foreignToken)")
            _ = await api.modifyZones(bob, ["create:Secrets"])
            let sameName = await Self.sameAsMissing(api, bob, "records/changes", foreign: alice.secretsToken, missing: Self.forged(alice.defaultToken),
                                                    #"{"zoneID":{"zoneName":"Secrets"},"syncToken":"@"}"#)
            #expect(sameName.hasPrefix("400 ") && sameName.contains("BAD_REQUEST"), "\(sameName)")
            #expect(await api.changes(bob, zone: "Secrets").summary.isEmpty)
            _ = await api.modifyZones(bob, ["delete:Secrets"])

            let zoneLookup = await Self.sameAsMissing(api, bob, "zones/lookup", foreign: "Secrets", missing: "NoSuchZone", #"{"zones":[{"zoneName":"@"}]}"#)
            #expect(zoneLookup.hasPrefix("200 ") && zoneLookup.contains("ZONE_NOT_FOUND"), "\(zoneLookup)")
            let zoneDelete = await Self.sameAsMissing(api, bob, "zones/modify", foreign: "Secrets", missing: "NoSuchZone",
                                                      #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"@"}}}]}"#)
            #expect(zoneDelete.hasPrefix("200 ") && zoneDelete.contains("ZONE_NOT_FOUND"), "\(zoneDelete)")
            #expect(await api.getDatabase("zones/list", token: bob).zoneNames == ["_defaultZone"])
            #expect(Set(await api.database("zones/changes", token: bob).zoneNames) == ["_defaultZone"])
            let databaseToken = await Self.sameAsMissing(api, bob, "zones/changes", foreign: alice.databaseToken, missing: Self.forged(alice.databaseToken), #"{"syncToken":"@"}"#)
            #expect(databaseToken.hasPrefix("400 ") && databaseToken.contains("BAD_REQUEST"), "\(databaseToken)")
            let bobUser = await api.getDatabase("users/current", token: bob).json["userRecordName"]?.stringValue
            let aliceUser = await api.getDatabase("users/current", token: alice.token).json["userRecordName"]?.stringValue
            #expect(bobUser != nil && aliceUser != nil && bobUser != aliceUser)

            let bobsOnAlices = await api.changes(alice.token, syncToken: bobDefaultToken)
            #expect(bobsOnAlices.status == 400 && bobsOnAlices.serverErrorCode == "BAD_REQUEST", "bob's token on alice's zone: \(bobsOnAlices)")
            try await Self.expectAliceUntouched(api, alice)
        }
    }

    @Test func otherContainersAndEnvironmentsAreOtherDatabases() async throws {
        try await APIFixture.with { api in
            let alice = try await Self.alice(api)
            #expect(await api.lookup(alice.token, ["alice-note"], container: "iCloud.org.p0deje.Maccy").codes == ["NOT_FOUND"])
            #expect(await api.lookup(alice.token, ["alice-note"], container: "iCloud.com.mirxa.AppLocker", environment: "production").codes == ["NOT_FOUND"])
            #expect(await api.lookup(alice.token, ["alice-note"], environment: "production").codes == ["NOT_FOUND"])
            #expect(await api.lookup(alice.token, ["alice-note"]).codes == ["ok"])
        }
    }

    /// Alice's records, feeds and zones are as she left them.
    private static func expectAliceUntouched(_ api: APIFixture, _ alice: Alice) async throws {
        let lookup = await api.lookup(alice.token, ["alice-note"])
        #expect(lookup.tag("alice-note") == alice.noteTag && lookup.value("alice-note", "text") == .string("alice only"), "\(lookup)")
        #expect(await api.changes(alice.token, syncToken: alice.defaultToken).summary.isEmpty, "alice's feed shows bob's writes")
        #expect(await api.changes(alice.token, zone: "Secrets", syncToken: alice.secretsToken).summary.isEmpty)
        #expect(await api.getDatabase("zones/list", token: alice.token).zoneNames == ["Secrets", "_defaultZone"])
    }
}
