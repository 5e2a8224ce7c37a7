import Foundation
import NimbusSupport
import Testing

/// The apps' flows (was the curl scenario 30): AppLocker's Mac publishes BlockedAppEvents and the
/// phone fetches the latest 100 by timestamp; LockedAppList is fetched-or-created by name and
/// updated with its change tag; Maccy's HistoryItems with DELETE_SELF contents go from one device
/// to the other through records/changes, and clearing the history reaches the other as tombstones.
@Suite struct AppFlowTests {
    private static let appLocker = "iCloud.com.mirxa.AppLocker", maccy = "iCloud.org.p0deje.Maccy"

    private static func nowMS() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test func bothDevicesOfAUserAreOneUserRecord() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac-mini"), phone = try await api.token(device: "iphone")
            let macUser = await api.getDatabase("users/current", token: mac).json["userRecordName"]?.stringValue
            let phoneUser = await api.getDatabase("users/current", token: phone).json["userRecordName"]?.stringValue
            #expect(macUser != nil && macUser == phoneUser)
        }
    }

    @Test func thePhoneFetchesTheLatestEventsNewestFirstAcrossPagesThatChangeBetween() async throws {
        try await APIFixture.with { api in
            try await api.importSchema("applocker.json")
            let mac = try await api.token(device: "mac-mini"), phone = try await api.token(device: "iphone")
            let user = try #require(await api.getDatabase("users/current", token: mac).json["userRecordName"]?.stringValue)
            let total = 150, base = Self.nowMS() - 3_600_000
            // Event i has timestamp base + i s; its name is a permutation of i, so name and time order differ.
            func name(_ i: Int) -> String { String(format: "evt-%03d", (i * 37) % total) }
            func event(_ i: Int) -> String {
                Op.record("create", name(i), "BlockedAppEvent", fields: #"{"appName":{"value":"App \#(i)"},"bundleID":{"value":"com.example.app\#(i % 7)"},"#
                    + #""deviceName":{"value":"mac-mini"},"timestamp":{"value":\#(base + Int64(i) * 1000),"type":"TIMESTAMP"}}"#)
            }
            for batch in 0..<3 {
                let created = await api.modify(mac, (batch * 50..<batch * 50 + 50).map(event), container: Self.appLocker)
                try #require(created.codes == Array(repeating: "ok", count: 50), "batch \(batch): \(created)")
            }
            let latest = #""query":{"recordType":"BlockedAppEvent","sortBy":[{"fieldName":"timestamp","ascending":false}]},"resultsLimit":100"#
            let page1 = await api.database("records/query", token: phone, "{\(latest)}", container: Self.appLocker)
            #expect(page1.names == (50..<total).reversed().map(name), "the latest 100 are not in timestamp-descending order: \(page1.names.prefix(5))")
            let times = page1.records.compactMap { $0["fields"]?["timestamp"]?["value"]?.int64Value }
            #expect(times.first == base + Int64(total - 1) * 1000, "the first event is not the newest")
            #expect(times.count == 100 && times == times.sorted(by: >), "timestamps are not descending")
            #expect(page1.records.allSatisfy { $0["fields"]?["timestamp"]?["type"]?.stringValue == "TIMESTAMP" })
            #expect(page1.value(name(149), "deviceName") == .string("mac-mini"))
            let created = page1.recordItem(name(149))?["created"]
            #expect(created?["userRecordName"]?.stringValue == user && created?["deviceID"]?.stringValue == "mac-mini" && created?["timestamp"]?.int64Value != nil)
            let marker = try #require(page1.json["continuationMarker"]?.stringValue, "100 of 150 events but no continuationMarker")

            // Between pages: one event older than all (comes on page 2), one newer (does not), two deleted.
            let late = await api.modify(mac, [Op.record("create", "evt-late-old", "BlockedAppEvent", fields: #"{"appName":{"value":"Old"},"timestamp":{"value":\#(base - 5000)}}"#),
                                              Op.record("create", "evt-late-new", "BlockedAppEvent", fields: #"{"appName":{"value":"New"},"timestamp":{"value":\#(base + 500_000)}}"#)],
                                        container: Self.appLocker)
            #expect(late.codes == ["ok", "ok"], "\(late)")
            #expect(await api.modify(mac, [Op.delete(name(120)), Op.delete(name(10))], container: Self.appLocker).codes == ["ok", "ok"])
            let page2 = await api.database("records/query", token: phone, #"{\#(latest),"continuationMarker":"\#(marker)"}"#, container: Self.appLocker)
            #expect(page2.names == (0..<50).reversed().filter { $0 != 10 }.map(name) + ["evt-late-old"], "\(page2.names)")
            #expect(page2.json["continuationMarker"] == nil, "the last page carries a continuationMarker")

            let filtered = await api.database("records/query", token: phone, #"""
                {"query":{"recordType":"BlockedAppEvent","filterBy":[{"fieldName":"timestamp","comparator":"GREATER_THAN_OR_EQUALS","fieldValue":{"value":\#(base + 140_000),"type":"TIMESTAMP"}}],
                 "sortBy":[{"fieldName":"timestamp","ascending":false}]}}
                """#, container: Self.appLocker)
            #expect(filtered.names == ["evt-late-new"] + (140...149).reversed().map(name), "\(filtered.names)")
        }
    }

    @Test func aLockedAppListIsFetchedOrCreatedAndUpdatedWithItsTag() async throws {
        try await APIFixture.with { api in
            try await api.importSchema("applocker.json")
            let mac = try await api.token(device: "mac-mini"), phone = try await api.token(device: "iphone")
            let missing = await api.lookup(phone, ["locked-iphone"], container: Self.appLocker)
            #expect(missing.codes == ["NOT_FOUND"] && missing.records.first?.isErrorBody == true, "\(missing)")
            let t0 = Self.nowMS()
            let create = await api.modify(phone, [Op.record("create", "locked-iphone", "LockedAppList", fields: #"{"deviceName":{"value":"iphone"},"updatedAt":{"value":\#(t0)}}"#)],
                                          container: Self.appLocker)
            let tag1 = try #require(create.tag("locked-iphone"), "\(create)")
            #expect(create.recordItem("locked-iphone")?["modified"]?["deviceID"]?.stringValue == "iphone")
            #expect(await api.modify(mac, [Op.record("create", "locked-mac-mini", "LockedAppList", fields: #"{"deviceName":{"value":"mac-mini"},"updatedAt":{"value":\#(t0 - 1000)}}"#)],
                                     container: Self.appLocker).codes == ["ok"])
            #expect(await api.lookup(phone, ["locked-iphone"], container: Self.appLocker).tag("locked-iphone") == tag1)
            let update = await api.modify(phone, [Op.record("update", "locked-iphone", "LockedAppList", fields: #"{"updatedAt":{"value":\#(t0 + 2000)}}"#, tag: tag1)],
                                          container: Self.appLocker)
            let tag2 = try #require(update.tag("locked-iphone"), "\(update)")
            #expect(tag2 != tag1 && (Int(tag2, radix: 36) ?? 0) > (Int(tag1, radix: 36) ?? .max), "the new tag \(tag2) is not after \(tag1)")
            #expect(update.value("locked-iphone", "deviceName") == .string("iphone"), "update lost the field it did not send")
            #expect(update.value("locked-iphone", "updatedAt") == .integer(t0 + 2000))

            let stale = await api.modify(mac, [Op.record("update", "locked-iphone", "LockedAppList", fields: #"{"updatedAt":{"value":1}}"#, tag: tag1)], container: Self.appLocker)
            let item = try #require(stale.records.first)
            #expect(item["serverErrorCode"]?.stringValue == "CONFLICT" && item.isErrorBody, "\(stale)")
            #expect(item["serverRecord"]?["recordName"]?.stringValue == "locked-iphone" && item["serverRecord"]?["recordType"]?.stringValue == "LockedAppList")
            #expect(item["serverRecord"]?["recordChangeTag"]?.stringValue == tag2 && item["serverRecord"]?["fields"]?["updatedAt"]?["value"] == .integer(t0 + 2000))
            #expect(await api.lookup(phone, ["locked-iphone"], container: Self.appLocker).tag("locked-iphone") == tag2, "the stale update changed the record")

            let lists = await api.database("records/query", token: phone, #"{"query":{"recordType":"LockedAppList","sortBy":[{"fieldName":"updatedAt","ascending":false}]}}"#,
                                           container: Self.appLocker)
            #expect(lists.names == ["locked-iphone", "locked-mac-mini"])
            // apps is an ASSETID: a value without a receipt of this server is refused.
            let forged = await api.modify(phone, [Op.record("update", "locked-iphone", "LockedAppList", fields: #"""
                {"apps":{"value":{"fileChecksum":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","size":2,"receipt":"forged"}}}
                """#, tag: tag2)], container: Self.appLocker)
            #expect(forged.codes == ["BAD_REQUEST"], "\(forged)")
        }
    }

    @Test func maccyHistoryGoesToTheOtherDeviceAndClearingItCascadesAsTombstones() async throws {
        try await APIFixture.with { api in
            try await api.importSchema("maccy.json")
            let mac = try await api.token(device: "mac-mini"), phone = try await api.token(device: "iphone")
            _ = await api.modifyZones(mac, ["create:History"], container: Self.maccy)
            let now = Self.nowMS()
            func b64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
            var operations: [String] = []
            for i in 1...5 {
                operations.append(Op.record("create", "h\(i)", "HistoryItem", fields: #"{"application":{"value":"com.apple.Safari"},"title":{"value":"\#(b64("sealed title \(i)"))","type":"ENCRYPTED_BYTES"},"#
                    + #""firstCopiedAt":{"value":\#(now - Int64(i) * 1000)},"lastCopiedAt":{"value":\#(now - Int64(i) * 1000)},"numberOfCopies":{"value":1}}"#))
                for part in ["a", "b"] {
                    operations.append(Op.record("create", "c\(i)-\(part)", "HistoryItemContent", fields: #"{"type":{"value":"public.utf8-plain-text"},"#
                        + #""value":{"value":"\#(b64("copied text \(i)\(part)"))","type":"ENCRYPTED_BYTES"},"item":{"value":{"recordName":"h\#(i)","action":"DELETE_SELF"}}}"#))
                }
            }
            let created = await api.modify(mac, zone: "History", operations, container: Self.maccy)
            try #require(created.codes == Array(repeating: "ok", count: 15), "\(created)")

            let first = await api.changes(phone, zone: "History", container: Self.maccy)
            #expect(first.moreComing == false)
            #expect(first.names.sorted() == (1...5).flatMap { ["c\($0)-a", "c\($0)-b"] } + (1...5).map { "h\($0)" })
            let reference = first.recordItem("c3-a")?["fields"]?["item"]
            #expect(reference?["type"]?.stringValue == "REFERENCE" && reference?["value"]?["recordName"]?.stringValue == "h3"
                    && reference?["value"]?["action"]?.stringValue == "DELETE_SELF", "\(String(describing: reference))")
            // The shipped schema declares these fields encrypted: the devices' bytes come back as sent.
            #expect(first.recordItem("c2-b")?["fields"]?["value"]?["value"]?.stringValue == b64("copied text 2b"))
            #expect(first.recordItem("c2-b")?["fields"]?["value"]?["type"]?.stringValue == "ENCRYPTED_BYTES")
            #expect(first.recordItem("h4")?["fields"]?["title"]?["value"]?.stringValue == b64("sealed title 4"))
            var phoneToken = try #require(first.syncToken)

            // The Mac copies h2 twice more: the phone sees h2 once, in its latest state.
            var h2 = try #require(await api.lookup(mac, zone: "History", ["h2"], container: Self.maccy).tag("h2"))
            for copies in 2...3 {
                let update = await api.modify(mac, zone: "History", [Op.record("update", "h2", "HistoryItem", fields: #"{"numberOfCopies":{"value":\#(copies)},"lastCopiedAt":{"value":\#(Self.nowMS())}}"#, tag: h2)],
                                              container: Self.maccy)
                h2 = try #require(update.tag("h2"), "\(update)")
            }
            let updates = await api.changes(phone, zone: "History", syncToken: phoneToken, container: Self.maccy)
            #expect(updates.summary == ["h2 \(h2)"] && updates.value("h2", "numberOfCopies") == .integer(3), "\(updates)")
            phoneToken = try #require(updates.syncToken)

            // The Mac clears the history: every HistoryItem deleted, contents cascade.
            let items = await api.database("records/query", token: mac, #"{"zoneID":{"zoneName":"History"},"query":{"recordType":"HistoryItem"}}"#, container: Self.maccy)
            let deletes = items.records.compactMap { item in item["recordName"]?.stringValue.map { Op.delete($0, tag: item["recordChangeTag"]?.stringValue) } }
            let cleared = await api.modify(mac, zone: "History", deletes, container: Self.maccy)
            #expect(String(decoding: cleared.body, as: UTF8.self) == #"{"records":["# + (1...5).map { #"{"recordName":"h\#($0)","deleted":true}"# }.joined(separator: ",") + "]}",
                    "\(cleared)")
            let tombstones = await api.changes(phone, zone: "History", syncToken: phoneToken, container: Self.maccy)
            #expect(tombstones.summary.sorted() == ((1...5).flatMap { ["c\($0)-a -", "c\($0)-b -"] } + (1...5).map { "h\($0) -" }), "\(tombstones)")
            #expect(tombstones.recordItem("c4-b")?["recordType"]?.stringValue == "HistoryItemContent" && tombstones.recordItem("h4")?["recordType"]?.stringValue == "HistoryItem")
            #expect(tombstones.records.allSatisfy { ($0.objectValue?.count ?? 0) == 3 }, "tombstone shape: \(tombstones)")
            phoneToken = try #require(tombstones.syncToken)
            #expect(await api.lookup(phone, zone: "History", ["h1", "c1-a"], container: Self.maccy).codes == ["NOT_FOUND", "NOT_FOUND"])
            #expect(await api.changes(phone, zone: "History", syncToken: phoneToken, container: Self.maccy).summary.isEmpty)
            #expect(await api.changes(phone, zone: "History", container: Self.maccy).summary.isEmpty, "tombstones must be omitted without a token")
        }
    }
}
