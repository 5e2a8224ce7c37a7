import Foundation
import NimbusSupport
import Testing

/// Zones and tokens (was the curl scenario 35): zones/modify create and delete (with its records),
/// ZONE_NOT_FOUND after deletion, CHANGE_TOKEN_EXPIRED for a token of a re-created zone,
/// zones/changes against a database token, reserved names, _defaultZone, zones/list tokens usable
/// as records/changes tokens, records/changes paging, desiredKeys and desiredRecordTypes, and
/// DELETE_SELF cascades.
@Suite struct ZoneTests {
    /// Alpha (a1, a2 Notes, a3 Task), Beta (b1, b2 → b1) and Gamma, as the scenario had them.
    private static func threeZones(_ api: APIFixture, _ mac: String) async throws {
        let created = await api.modifyZones(mac, ["create:Alpha", "create:Beta", "create:Gamma"])
        #expect(created.zoneItems == ["Alpha ok", "Beta ok", "Gamma ok"], "\(created)")
        #expect(created.zoneToken("Alpha")?.isEmpty == false, "a created zone is answered without its syncToken: \(created)")
        let alpha = await api.modify(mac, zone: "Alpha", [
            Op.record("create", "a1", fields: #"{"text":{"value":"one"},"size":{"value":1}}"#),
            Op.record("create", "a2", fields: #"{"text":{"value":"two"},"size":{"value":2}}"#),
            Op.record("create", "a3", "Task", fields: #"{"title":{"value":"three"}}"#)])
        try #require(alpha.codes == ["ok", "ok", "ok"], "\(alpha)")
        let beta = await api.modify(mac, zone: "Beta", [
            Op.record("create", "b1", fields: #"{"text":{"value":"beta"}}"#),
            Op.record("create", "b2", fields: #"{"parent":{"value":{"recordName":"b1","action":"DELETE_SELF"},"type":"REFERENCE"}}"#)])
        try #require(beta.codes == ["ok", "ok"], "\(beta)")
    }

    @Test func zonesListTokensAreTheZonesCurrentChangeTokens() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            try await Self.threeZones(api, mac)
            let list = await api.getDatabase("zones/list", token: phone)
            #expect(list.zoneNames == ["Alpha", "Beta", "Gamma", "_defaultZone"], "\(list)")
            for zone in ["Alpha", "Beta", "Gamma", "_defaultZone"] {
                let token = try #require(list.zoneToken(zone), "zones/list has no syncToken for \(zone): \(list)")
                let changes = await api.changes(phone, zone: zone, syncToken: token)
                #expect(changes.status == 200 && changes.summary.isEmpty && changes.moreComing == false, "\(zone): \(changes)")
            }
            _ = await api.modify(mac, zone: "Alpha", [Op.record("forceUpdate", "a4", fields: #"{"text":{"value":"four"}}"#)])
            let since = await api.changes(phone, zone: "Alpha", syncToken: list.zoneToken("Alpha"))
            #expect(since.summary.map { $0.split(separator: " ")[0] } == ["a4"], "\(since)")
        }
    }

    @Test func changesPageInOrderAndFilterByTypeAndKeys() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            try await Self.threeZones(api, mac)
            _ = await api.modify(mac, zone: "Alpha", [Op.record("forceUpdate", "a4", fields: #"{"text":{"value":"four"}}"#)])
            var page = await api.changes(phone, zone: "Alpha", limit: 1)
            #expect(page.moreComing == true, "a page of 1 of 4 records without moreComing: \(page)")
            var collected = page.names
            while page.moreComing == true {
                page = await api.changes(phone, zone: "Alpha", syncToken: page.syncToken, limit: 1)
                collected += page.names
            }
            #expect(collected == ["a1", "a2", "a3", "a4"])
            let tasks = await api.changes(phone, zone: "Alpha", extra: #","desiredRecordTypes":["Task"]"#)
            #expect(tasks.names == ["a3"], "\(tasks)")
            let notes = await api.changes(phone, zone: "Alpha", extra: #","desiredKeys":["size"],"desiredRecordTypes":["Note"]"#)
            #expect(notes.names == ["a1", "a2", "a4"], "\(notes)")
            #expect(notes.value("a2", "size") == .integer(2), "\(notes)")
            #expect(notes.records.allSatisfy { $0["fields"]?["text"] == nil }, "desiredKeys [size] still returns text: \(notes)")
        }
    }

    @Test func zonesChangesReportCreatedChangedAndDeletedZonesAgainstADatabaseToken() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            let fresh = await api.database("zones/changes", token: phone)
            #expect(fresh.zoneNames == ["_defaultZone"], "\(fresh)")
            let token0 = try #require(fresh.syncToken)
            try await Self.threeZones(api, mac)
            let all = await api.database("zones/changes", token: phone)
            #expect(all.zoneNames == ["Alpha", "Beta", "Gamma", "_defaultZone"])
            let token1 = try #require(all.syncToken)
            #expect(await api.database("zones/changes", token: phone, #"{"syncToken":"\#(token1)"}"#).zoneNames.isEmpty)
            #expect(await api.database("zones/changes", token: phone, #"{"syncToken":"\#(token0)"}"#).zoneNames == ["Alpha", "Beta", "Gamma"])
            _ = await api.modifyZones(mac, ["create:Delta"])
            _ = await api.modify(mac, zone: "Gamma", [Op.record("create", "g1", fields: #"{"text":{"value":"g"}}"#)])
            #expect(await api.modifyZones(mac, ["delete:Beta"]).zoneItems == ["Beta deleted"])
            let changes = await api.database("zones/changes", token: phone, #"{"syncToken":"\#(token1)"}"#)
            #expect(changes.zoneNames == ["Beta", "Delta", "Gamma"], "\(changes)")
            let beta = changes.items("zones").first { $0["zoneID"]?["zoneName"]?.stringValue == "Beta" }
            #expect(beta?["deleted"]?.boolValue == true, "Beta is not reported deleted: \(changes)")
            let gammaToken = try #require(changes.zoneToken("Gamma"), "Gamma without its token: \(changes)")
            #expect(await api.changes(phone, zone: "Gamma", syncToken: gammaToken).summary.isEmpty, "Gamma's token is not current")
            let token2 = try #require(changes.syncToken)
            #expect(await api.database("zones/changes", token: phone, #"{"syncToken":"\#(token2)"}"#).zoneNames.isEmpty)
            var page = await api.database("zones/changes", token: phone, #"{"syncToken":"\#(token1)","resultsLimit":1}"#)
            #expect(page.moreComing == true, "zones/changes of 3 zones with resultsLimit 1 without moreComing: \(page)")
            var seen = page.zoneNames
            while page.moreComing == true, let token = page.syncToken {
                page = await api.database("zones/changes", token: phone, #"{"syncToken":"\#(token)","resultsLimit":1}"#)
                seen += page.zoneNames
            }
            #expect(seen.sorted() == ["Beta", "Delta", "Gamma"])
        }
    }

    @Test func aDeletedZoneIsNotFoundEverywhereAndARecreatedOneStartsEmptyWithOldTokensExpired() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            try await Self.threeZones(api, mac)
            let betaOldToken = try #require(await api.getDatabase("zones/list", token: phone).zoneToken("Beta"))
            #expect(await api.modifyZones(mac, ["delete:Beta"]).zoneItems == ["Beta deleted"])
            let requests = [("records/changes", #"{"zoneID":{"zoneName":"Beta"}}"#),
                            ("records/lookup", #"{"zoneID":{"zoneName":"Beta"},"records":[{"recordName":"b1"}]}"#),
                            ("records/query", #"{"zoneID":{"zoneName":"Beta"},"query":{"recordType":"Note"}}"#),
                            ("records/modify", #"{"zoneID":{"zoneName":"Beta"},"operations":[\#(Op.record("forceUpdate", "b3", fields: #"{"text":{"value":"x"}}"#))]}"#)]
            for (operation, body) in requests {
                let answer = await api.database(operation, token: phone, body)
                #expect(answer.status == 404 && answer.serverErrorCode == "ZONE_NOT_FOUND", "\(operation): \(answer)")
            }
            let lookup = await api.database("zones/lookup", token: phone, #"{"zones":[{"zoneName":"Alpha"},{"zoneName":"Beta"},{"zoneName":"_defaultZone"}]}"#)
            #expect(lookup.zoneItems == ["Alpha ok", "Beta ZONE_NOT_FOUND", "_defaultZone ok"], "\(lookup)")
            #expect(await api.getDatabase("zones/list", token: phone).zoneNames == ["Alpha", "Gamma", "_defaultZone"])
            #expect(await api.modifyZones(mac, ["delete:Beta"]).zoneItems == ["Beta ZONE_NOT_FOUND"])

            #expect(await api.modifyZones(mac, ["create:Beta"]).zoneItems == ["Beta ok"])
            #expect(await api.changes(phone, zone: "Beta").summary.isEmpty, "the re-created zone still holds records")
            #expect(await api.lookup(phone, zone: "Beta", ["b1", "b2"]).codes == ["NOT_FOUND", "NOT_FOUND"])
            // The old zone's DELETE_SELF edge is gone too: deleting a new b1 leaves b9 alone.
            #expect(await api.modify(mac, zone: "Beta", [Op.record("create", "b1", fields: #"{"text":{"value":"new"}}"#),
                                                        Op.record("create", "b9", fields: #"{"text":{"value":"unrelated"}}"#),
                                                        Op.record("create", "b10", fields: #"{"text":{"value":"more"}}"#)]).codes == ["ok", "ok", "ok"])
            // The new zone's sequence is now past the old token's: only the zone's identity refuses it.
            let expired = await api.changes(phone, zone: "Beta", syncToken: betaOldToken)
            #expect(expired.status == 410 && expired.serverErrorCode == "CHANGE_TOKEN_EXPIRED", "\(expired)")
            let b1 = try #require(await api.lookup(mac, zone: "Beta", ["b1"]).tag("b1"))
            _ = await api.modify(mac, zone: "Beta", [Op.delete("b1", tag: b1)])
            #expect(await api.lookup(mac, zone: "Beta", ["b9"]).codes == ["ok"])
        }
    }

    @Test func deleteSelfCascadesTransitivelyAndNamelessCreatesGetUUIDs() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            _ = await api.modifyZones(mac, ["create:Tree"])
            func parent(_ name: String, _ action: String = "DELETE_SELF") -> String {
                #"{"parent":{"value":{"recordName":"\#(name)","action":"\#(action)"},"type":"REFERENCE"}}"#
            }
            let tree = await api.modify(mac, zone: "Tree", [Op.record("create", "root", "Node", fields: #"{"depth":{"value":0}}"#),
                                                            Op.record("create", "child", "Node", fields: parent("root")),
                                                            Op.record("create", "grandchild", "Node", fields: parent("child")),
                                                            Op.record("create", "loose", "Node", fields: parent("root", "NONE"))])
            try #require(tree.codes == ["ok", "ok", "ok", "ok"], "\(tree)")
            let token = try #require(await api.changes(phone, zone: "Tree").syncToken)
            let deleted = await api.modify(mac, zone: "Tree", [Op.delete("root")])
            #expect(String(decoding: deleted.body, as: UTF8.self) == #"{"records":[{"recordName":"root","deleted":true}]}"#, "\(deleted)")
            #expect(await api.changes(phone, zone: "Tree", syncToken: token).summary.sorted() == ["child -", "grandchild -", "root -"])
            #expect(await api.lookup(phone, zone: "Tree", ["loose", "grandchild"]).codes == ["ok", "NOT_FOUND"])
            let nameless = await api.database("records/modify", token: mac, #"""
                {"zoneID":{"zoneName":"Tree"},"operations":[{"operationType":"create","record":{"recordType":"Node","fields":{"depth":{"value":9}}}},
                 {"operationType":"create","record":{"recordName":"","recordType":"Node"}}]}
                """#)
            #expect(nameless.codes == ["ok", "ok"], "\(nameless)")
            #expect(nameless.names.count == 2 && nameless.names.allSatisfy { UUID(uuidString: $0) != nil }, "generated names are not UUIDs: \(nameless.names)")
        }
    }

    @Test func reservedNamesAreRefusedAndCreatingAnExistingZoneKeepsItsRecordsAndTokens() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            try await Self.threeZones(api, mac)
            let alphaToken = try #require(await api.getDatabase("zones/list", token: phone).zoneToken("Alpha"))
            _ = await api.modify(mac, zone: "Alpha", [Op.record("forceUpdate", "a4", fields: #"{"text":{"value":"four"}}"#)])
            let answer = await api.modifyZones(mac, ["create:_private", "create:_", "create:Epsilon", "create:_defaultZone", "delete:_defaultZone", "create:Alpha"])
            #expect(answer.zoneItems == ["_private BAD_REQUEST", "_ BAD_REQUEST", "Epsilon ok", "_defaultZone ok", "_defaultZone BAD_REQUEST", "Alpha ok"], "\(answer)")
            #expect(answer.items("zones").first?.isErrorBody == true, "\(answer)")
            #expect(await api.lookup(phone, zone: "Alpha", ["a1"]).codes == ["ok"])
            #expect(await api.changes(phone, zone: "Alpha", syncToken: alphaToken).names == ["a4"], "creating an existing zone disturbed its feed")
            #expect(await api.getDatabase("zones/list", token: phone).zoneNames == ["Alpha", "Beta", "Epsilon", "Gamma", "_defaultZone"])
        }
    }
}
