import Foundation
import NimbusCore
import NimbusStore
import NimbusSupport
import Testing

/// Assets in the apps' flows, on the production schemas of deploy/schemas, in process (was
/// scenario 54; the server's own pruning job stays there): AppLocker's intruder photo found by
/// query and by changes and downloaded byte for byte, not by another user; its locked-app list
/// replaced by a new upload, only the new one referenced; Maccy's clipboard asset released by the
/// DELETE_SELF cascade; collection after the grace period keeps what is referenced.
@Suite struct AssetAppFlowTests {
    static let appLocker = "iCloud.com.mirxa.AppLocker", maccy = "iCloud.org.p0deje.Maccy"

    static func importSchemas(_ fixture: APIFixture) async throws {
        for name in ["applocker", "maccy"] {
            let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../deploy/schemas/\(name).json")
            let schema = try ContainerSchema.parseFile(JSONValue.parse(Array(try Data(contentsOf: file))))
            try await fixture.database.store.schemas.importSchema(schema, environment: .production)
        }
    }

    /// `sha256-base64/size` of each asset_references row of record `name`, sorted.
    static func references(_ fixture: APIFixture, _ name: String) async throws -> [String] {
        try await fixture.database.pool.query(
            "SELECT encode(sha256, 'base64') || '/' || size FROM asset_references WHERE record_name = \(name) ORDER BY 1") { try $0.string(0) }
    }

    static func assetRows(_ fixture: APIFixture) async throws -> [String] {
        try await fixture.database.pool.query("SELECT encode(sha256, 'base64') || '/' || size FROM assets ORDER BY 1") { try $0.string(0) }
    }

    @Test func theAppsAssetsRoundTripAreReplacedReleasedAndCollected() async throws {
        try await APIFixture.with { fixture in
            try await Self.importSchemas(fixture)
            let mac = try await fixture.token(device: "mac-mini"), phone = try await fixture.token(device: "iphone")
            let bob = try await fixture.token(user: "bob", device: "bob-mac")
            func op(_ operation: String, _ token: String, _ body: String, _ container: String = Self.appLocker) async -> Answer {
                await fixture.database(operation, token: token, body, environment: "production", container: container)
            }
            var phoneToken = await op("records/changes", phone, #"{"zoneID":{"zoneName":"_defaultZone"}}"#).json["syncToken"]?.stringValue ?? ""

            // The Mac: an encrypted intruder photo (.aplkimg: magic, nonce, ciphertext, tag) with a FailedAuthEvent.
            let photo = Array("APLKIMG1".utf8) + randomBytes(12 + 183_517 + 16)
            let uploads = await op("assets/upload", mac, #"{"tokens":[{"recordType":"FailedAuthEvent","fieldName":"photoAsset","recordName":"fae-1"}]}"#)
            #expect(uploads.items("tokens").first?["recordName"]?.stringValue == "fae-1" && uploads.items("tokens").first?["fieldName"]?.stringValue == "photoAsset")
            let uploaded = UploadedFile(await fixture.post(photo, to: uploads.items("tokens").first?["url"]?.stringValue ?? "", token: mac))
            #expect(uploaded.checksum == checksum(photo) && uploaded.size == Int64(photo.count), "\(uploaded.answer)")
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let create = #"{"operations":[{"operationType":"create","record":{"recordName":"fae-1","recordType":"FailedAuthEvent","fields":{"appName":{"value":"Safari"},"bundleID":{"value":"com.apple.Safari"},"deviceName":{"value":"mac-mini"},"timestamp":{"value":\#(now),"type":"TIMESTAMP"},"photoAsset":\#(uploaded.field)}}}]}"#
            let saved = await op("records/modify", mac, create)
            let tag = saved.record("fae-1")?["recordChangeTag"]?.stringValue
            let retried = await op("records/modify", mac, create)
            #expect(saved.itemCodes == ["ok"] && retried.itemCodes == ["ok"] && retried.record("fae-1")?["recordChangeTag"]?.stringValue == tag,
                    "the retried create is idempotent: \(retried)")

            let query = await op("records/query", phone, #"{"query":{"recordType":"FailedAuthEvent","sortBy":[{"fieldName":"timestamp","ascending":false}]},"resultsLimit":10}"#)
            #expect(query.items("records").first?["recordName"]?.stringValue == "fae-1", "\(query)")
            let photoURL = query.asset("fae-1", "photoAsset")?["downloadURL"]?.stringValue ?? ""
            #expect(query.asset("fae-1", "photoAsset")?["fileChecksum"]?.stringValue == uploaded.checksum)
            let downloaded = await fixture.get(photoURL, token: phone)
            #expect(downloaded.body == photo && downloaded.header("ETag") == "\"\(uploaded.checksum)\"", "the phone's photo download")
            let changes = await op("records/changes", phone, #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"\#(phoneToken)"}"#)
            phoneToken = changes.json["syncToken"]?.stringValue ?? ""
            #expect(changes.items("records").compactMap { $0["recordName"]?.stringValue } == ["fae-1"], "\(changes)")
            #expect(await fixture.get(changes.asset("fae-1", "photoAsset")?["downloadURL"]?.stringValue ?? "", token: phone).body == photo)
            #expect(await fixture.get(photoURL, token: bob).status == 404, "bob does not download the photo")
            #expect(await op("records/query", bob, #"{"query":{"recordType":"FailedAuthEvent"}}"#).items("records").isEmpty, "bob finds no event")

            // LockedAppList.apps: a JSON list as an asset, replaced by a new upload (forceReplace).
            func saveList(_ bytes: [UInt8]) async -> UploadedFile {
                let list = await fixture.upload(bytes, token: mac, recordType: "LockedAppList", field: "apps", environment: "production", container: Self.appLocker)
                let answer = await op("records/modify", mac, #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"locked-mac-mini","recordType":"LockedAppList","fields":{"deviceName":{"value":"mac-mini"},"apps":\#(list.field)}}}]}"#)
                #expect(answer.itemCodes == ["ok"], "\(answer)")
                return list
            }
            let v1Bytes = Array(#"["com.apple.Safari","com.tinyspeck.slackmacgap"]"#.utf8)
            let v1 = await saveList(v1Bytes)
            let v1URL = await op("records/lookup", phone, #"{"records":[{"recordName":"locked-mac-mini"}]}"#).asset("locked-mac-mini", "apps")?["downloadURL"]?.stringValue ?? ""
            #expect(await fixture.get(v1URL, token: phone).body == v1Bytes)
            #expect(try await Self.references(fixture, "locked-mac-mini") == ["\(v1.checksum)/\(v1.size)"])
            phoneToken = await op("records/changes", phone, #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"\#(phoneToken)"}"#).json["syncToken"]?.stringValue ?? ""
            let v2Bytes = Array(#"["com.apple.Safari","com.tinyspeck.slackmacgap","com.apple.Terminal"]"#.utf8)
            let v2 = await saveList(v2Bytes)
            let replaced = await op("records/changes", phone, #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"\#(phoneToken)"}"#)
            #expect(replaced.items("records").compactMap { $0["recordName"]?.stringValue } == ["locked-mac-mini"], "\(replaced)")
            #expect(replaced.asset("locked-mac-mini", "apps")?["fileChecksum"]?.stringValue == v2.checksum)
            let v2URL = replaced.asset("locked-mac-mini", "apps")?["downloadURL"]?.stringValue ?? ""
            #expect(await fixture.get(v2URL, token: phone).body == v2Bytes)
            #expect(try await Self.references(fixture, "locked-mac-mini") == ["\(v2.checksum)/\(v2.size)"], "only v2 stays referenced")

            // Maccy: a 400 KB clipboard value; clearing the history (DELETE_SELF) releases it.
            #expect(await op("zones/modify", mac, #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"History"}}}]}"#, Self.maccy).status == 200)
            let clip = randomBytes(400_000)
            let clipURL = await fixture.uploadURL(token: mac, recordType: "HistoryItemContent", field: "asset", zone: "History", environment: "production", container: Self.maccy)
            let clipUpload = UploadedFile(await fixture.post(clip, to: clipURL, token: mac))
            let history = await op("records/modify", mac, #"{"zoneID":{"zoneName":"History"},"operations":[{"operationType":"create","record":{"recordName":"h1","recordType":"HistoryItem","fields":{"application":{"value":"com.apple.Preview"},"numberOfCopies":{"value":1}}}},{"operationType":"create","record":{"recordName":"c1","recordType":"HistoryItemContent","fields":{"type":{"value":"public.tiff"},"asset":\#(clipUpload.field),"item":{"value":{"recordName":"h1","action":"DELETE_SELF"},"type":"REFERENCE"}}}}]}"#, Self.maccy)
            #expect(history.itemCodes == ["ok", "ok"], "\(history)")
            let pulled = await op("records/changes", phone, #"{"zoneID":{"zoneName":"History"}}"#, Self.maccy)
            #expect(await fixture.get(pulled.asset("c1", "asset")?["downloadURL"]?.stringValue ?? "", token: phone).body == clip)
            #expect(try await Self.references(fixture, "c1") == ["\(clipUpload.checksum)/\(clipUpload.size)"])
            _ = await op("records/modify", mac, #"{"zoneID":{"zoneName":"History"},"operations":[{"operationType":"forceDelete","record":{"recordName":"h1"}}]}"#, Self.maccy)
            #expect(await op("records/lookup", mac, #"{"zoneID":{"zoneName":"History"},"records":[{"recordName":"c1"}]}"#, Self.maccy).itemCodes == ["NOT_FOUND"])
            #expect(try await Self.references(fixture, "c1").isEmpty, "the cascade released c1's asset")
            let deleted = await op("records/modify", mac, #"{"operations":[{"operationType":"delete","record":{"recordName":"fae-1","recordChangeTag":"\#(tag ?? "")"}}]}"#)
            let photoReferences = try await Self.references(fixture, "fae-1")
            #expect(deleted.itemCodes == ["ok"] && photoReferences.isEmpty, "a deleted record references no asset")

            // Collection: nothing inside the grace period or on a dry run; then only v2 stays.
            let before = try await Self.assetRows(fixture)
            #expect(before == ["\(v1.checksum)/\(v1.size)", "\(v2.checksum)/\(v2.size)", "\(clipUpload.checksum)/\(clipUpload.size)", "\(uploaded.checksum)/\(uploaded.size)"].sorted())
            var options = PruneOptions()
            options.assetGraceSeconds = 3600
            _ = try await fixture.database.store.pruner.prune(options, wait: true)
            #expect(try await Self.assetRows(fixture) == before, "nothing released inside the grace period goes")
            options.assetGraceSeconds = 0
            options.dryRun = true
            _ = try await fixture.database.store.pruner.prune(options, wait: true)
            #expect(try await Self.assetRows(fixture) == before, "a dry run removes nothing")
            options.dryRun = false
            _ = try await fixture.database.store.pruner.prune(options, wait: true)
            #expect(try await Self.assetRows(fixture) == ["\(v2.checksum)/\(v2.size)"], "the three released assets go, the referenced list stays")
            #expect(try await AssetTests.query(fixture, "SELECT count(*)::text FROM asset_chunks") == "1")
            let photoGone = await fixture.get(photoURL, token: phone), v1Gone = await fixture.get(v1URL, token: phone)
            #expect(photoGone.status == 404 && v1Gone.status == 404, "the collected assets' URLs: \(photoGone) \(v1Gone)")
            #expect(await fixture.get(v2URL, token: phone).body == v2Bytes)

            // Bytes uploaded again (deduplicated) after their grace period get a grace period of their own.
            let again = randomBytes(5000)
            _ = await fixture.upload(again, token: mac, recordType: "LockedAppList", field: "apps", environment: "production", container: Self.appLocker)
            try await Task.sleep(nanoseconds: 2_200_000_000)
            let second = await fixture.upload(again, token: phone, recordType: "LockedAppList", field: "apps", environment: "production", container: Self.appLocker)
            options.assetGraceSeconds = 2
            _ = try await fixture.database.store.pruner.prune(options, wait: true)
            let kept = await op("records/modify", phone, #"{"operations":[{"operationType":"create","record":{"recordName":"again","recordType":"LockedAppList","fields":{"apps":\#(second.field)}}}]}"#)
            #expect(kept.itemCodes == ["ok"], "bytes re-uploaded after their grace period survive a prune right after: \(kept)")
        }
    }
}
