import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import Testing

/// What limits an asset besides its size (was scenario 51): upload tokens per request, receipts
/// that must be this database's for these bytes, the user's storage quota over all their
/// databases, and the URLs' origin (`--public-url`, else `Host`).
@Suite struct AssetQuotaTests {
    static let maccy = "iCloud.org.p0deje.Maccy"

    @Test func twoHundredUploadTokensPerRequestAndEachMustNameAField() async throws {
        try await APIFixture.with { fixture in
            let mac = try await fixture.token()
            let tokens = (0..<200).map { #"{"recordType":"Blob","fieldName":"data","recordName":"r\#($0)"}"# }.joined(separator: ",")
            let over = await fixture.database("assets/upload", token: mac, #"{"tokens":[\#(tokens),{"recordType":"Blob","fieldName":"data"}]}"#)
            #expect(over.status == 413 && over.serverErrorCode == "LIMIT_EXCEEDED", "201 tokens: \(over)")
            let limit = await fixture.database("assets/upload", token: mac, #"{"tokens":[\#(tokens)]}"#)
            let urls = limit.items("tokens").compactMap { $0["url"]?.stringValue }
            #expect(Set(urls).count == 200 && urls.allSatisfy { $0.hasPrefix(APIFixture.origin + "/assets/1/upload/") }, "200 distinct URLs")
            #expect(limit.items("tokens").last?["recordName"]?.stringValue == "r199" && limit.items("tokens").last?["fieldName"]?.stringValue == "data")
            let zone = await fixture.database("assets/upload", token: mac, #"{"zoneID":{"zoneName":"nowhere"},"tokens":[{"recordType":"Blob","fieldName":"data"}]}"#)
            #expect(zone.status == 404 && zone.serverErrorCode == "ZONE_NOT_FOUND", "\(zone)")
            let noField = await fixture.database("assets/upload", token: mac, #"{"tokens":[{"recordType":"Blob"}]}"#)
            #expect(noField.status == 400 && noField.serverErrorCode == "BAD_REQUEST", "\(noField)")
        }
    }

    @Test func aReceiptMustBeThisDatabasesForTheseBytes() async throws {
        try await APIFixture.with { fixture in
            let mac = try await fixture.token(), bob = try await fixture.token(user: "bob", device: "bob-mac")
            let x = randomBytes(1000), y = randomBytes(1000)
            let mine = await fixture.upload(x, token: mac), other = await fixture.upload(y, token: mac)
            let bobs = await fixture.upload(x, token: bob)
            #expect(bobs.checksum == mine.checksum)
            let otherDatabase = await fixture.upload(x, token: mac, container: Self.maccy)
            #expect(otherDatabase.answer.status == 200, "\(otherDatabase.answer)")
            func record(_ name: String, _ field: String) -> String {
                #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Blob","fields":{"data":\#(field)}}}"#
            }
            let operations = [
                record("w-size", assetField(checksum: mine.checksum, size: 1001, receipt: mine.receipt)),
                record("w-checksum", assetField(checksum: other.checksum, size: 1000, receipt: mine.receipt)),
                record("w-bob", assetField(checksum: mine.checksum, size: 1000, receipt: bobs.receipt)),
                record("w-other-db", assetField(checksum: mine.checksum, size: 1000, receipt: otherDatabase.receipt)),
                record("w-garbage", assetField(checksum: mine.checksum, size: 1000, receipt: "garbage")),
                record("w-empty", assetField(checksum: mine.checksum, size: 1000, receipt: "")),
                record("w-none", #"{"value":{"fileChecksum":"\#(mine.checksum)","size":1000},"type":"ASSETID"}"#),
                record("w-not-base64", assetField(checksum: "not*base64", size: 1000, receipt: mine.receipt)),
                record("w-negative", assetField(checksum: mine.checksum, size: -1, receipt: mine.receipt)),
                record("w-good", mine.field),
            ]
            let saved = await fixture.database("records/modify", token: mac, #"{"operations":[\#(operations.joined(separator: ","))]}"#)
            #expect(saved.itemCodes == Array(repeating: "BAD_REQUEST", count: 9) + ["ok"], "\(saved)")
            let lookup = await fixture.database("records/lookup", token: mac,
                                                #"{"records":[{"recordName":"w-size"},{"recordName":"w-checksum"},{"recordName":"w-bob"},{"recordName":"w-other-db"},{"recordName":"w-good"}]}"#)
            #expect(lookup.itemCodes == ["NOT_FOUND", "NOT_FOUND", "NOT_FOUND", "NOT_FOUND", "ok"], "nothing wrong was saved: \(lookup)")
        }
    }

    @Test func theQuotaCountsEveryDatabaseOfTheUserAndStoredBytesTakeNoMoreRoom() async throws {
        var limits = Limits()
        limits.userQuotaBytes = 5000
        try await APIFixture.with(limits: limits) { fixture in
            let mac = try await fixture.token(device: "mac"), phone = try await fixture.token(device: "phone")
            let bob = try await fixture.token(user: "bob", device: "bob-mac")
            let stored = randomBytes(1000)
            #expect(await fixture.upload(stored, token: mac).answer.status == 200)
            #expect(await fixture.upload(randomBytes(2500), token: mac, container: Self.maccy).answer.status == 200, "another database of alice")
            // 1,500 bytes of room left.
            let url = await fixture.uploadURL(token: mac)
            let over = await fixture.post(randomBytes(1501), to: url, token: mac)
            #expect(over.status == 413 && over.serverErrorCode == "QUOTA_EXCEEDED", "1,501 bytes with 1,500 left: \(over)")
            #expect(try await AssetTests.query(fixture, "SELECT count(*)::text FROM assets") == "2", "nothing stored of a refused upload")
            let exact = await fixture.post(randomBytes(1500), to: url, token: mac)
            #expect(exact.status == 200, "exactly the room left, on the URL refused before: \(exact)")
            for (token, container) in [(phone, fixture.container), (mac, Self.maccy)] {
                let refused = await fixture.upload([7], token: token, container: container)
                #expect(refused.answer.status == 413 && refused.answer.serverErrorCode == "QUOTA_EXCEEDED", "one more byte in \(container): \(refused.answer)")
            }
            #expect(await fixture.upload([7], token: bob).answer.status == 200, "bob has a quota of his own")
            let again = await fixture.upload(stored, token: mac)
            #expect(again.answer.status == 200 && again.checksum == checksum(stored), "at the quota, stored bytes upload again: \(again.answer)")
        }
    }

    @Test func concurrentUploadsStayWithinTheQuota() async throws {
        var limits = Limits()
        limits.userQuotaBytes = 400_000
        try await APIFixture.with(limits: limits) { fixture in
            let carol = try await fixture.token(user: "carol", device: "carol-mac")
            var urls: [String] = []
            for _ in 1...5 { urls.append(await fixture.uploadURL(token: carol)) }
            let statuses = await withTaskGroup(of: Int.self) { group in
                for url in urls { group.addTask { await fixture.post(randomBytes(100_000), to: url, token: carol, pieces: 20).status } }
                return await group.reduce(into: [Int]()) { $0.append($1) }
            }
            let bytes = try await AssetTests.query(fixture, "SELECT COALESCE(sum(size), 0)::text FROM assets WHERE complete")
            #expect((Int(bytes) ?? .max) <= 400_000, "5 concurrent uploads of 100,000 bytes (\(statuses)) stored \(bytes) bytes, over the quota")
        }
    }

    @Test func uploadAndDownloadURLsFollowThePublicURLElseTheHost() async throws {
        try await APIFixture.with { fixture in
            let mac = try await fixture.token()
            let uploaded = await fixture.upload(randomBytes(10), token: mac)
            _ = await fixture.database("records/modify", token: mac,
                                       #"{"operations":[{"operationType":"create","record":{"recordName":"small","recordType":"Blob","fields":{"data":\#(uploaded.field)}}}]}"#)
            let lookup = #"{"records":[{"recordName":"small"}]}"#
            let host = await fixture.start("POST", "/database/1/\(fixture.container)/development/private/records/lookup", token: mac, body: lookup,
                                           headers: ["Host": "sync.example.test:8443"]).answer()
            #expect(host.asset("small")?["downloadURL"]?.stringValue?.hasPrefix("http://sync.example.test:8443/assets/1/download/") == true, "\(host)")

            let behind = APIFixture(database: fixture.database, api: API(store: fixture.database.store, limits: Limits(),
                                                                          publicURL: "https://sync.example.org/nimbus/"))
            let upload = await behind.database("assets/upload", token: mac, #"{"tokens":[{"recordType":"Blob","fieldName":"data"}]}"#)
            #expect(upload.items("tokens").first?["url"]?.stringValue?.hasPrefix("https://sync.example.org/nimbus/assets/1/upload/") == true, "\(upload)")
            let found = await behind.database("records/lookup", token: mac, lookup)
            #expect(found.asset("small")?["downloadURL"]?.stringValue?.hasPrefix("https://sync.example.org/nimbus/assets/1/download/") == true, "\(found)")
        }
    }
}
