import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusPostgres
import NimbusSupport
import Testing

/// Assets in process (were scenarios 50 and 51; the wire's framings, 50 MiB, a pipelined upload
/// and `maxAssetBytes` at the byte edge stay there): the checksum is the SHA-256 of the bytes,
/// identical bytes are stored once, saved records show fileChecksum, size and an absolute
/// downloadURL that another device of the user downloads byte for byte; upload URLs are single-use
/// and their owner's; downloads are the owner's.
@Suite struct AssetTests {
    /// `SELECT` one text column of the fixture's database.
    static func query(_ fixture: APIFixture, _ sql: SQL) async throws -> String {
        try await fixture.database.pool.queryFirst(sql) { try $0.string(0) } ?? ""
    }

    @Test func bytesRoundTripByTheirChecksumAndAreStoredOnce() async throws {
        try await APIFixture.with { fixture in
            let mac = try await fixture.token(device: "mac-mini"), phone = try await fixture.token(device: "iphone")
            let k = 262_144
            let sizes = [0, 1, k - 1, k, k + 1, 2 * k + 3]
            var files: [String: [UInt8]] = [:], uploads: [String: UploadedFile] = [:]
            for size in sizes {
                for copy in ["a", "b"] {
                    let bytes = size == 0 ? [] : randomBytes(size)
                    files["\(copy)-\(size)"] = bytes
                    let uploaded = await fixture.upload(bytes, token: mac)
                    #expect(uploaded.answer.status == 200 && uploaded.checksum == checksum(bytes) && uploaded.size == Int64(size), "\(uploaded.answer)")
                    uploads["\(copy)-\(size)"] = uploaded
                }
            }
            #expect(uploads["a-0"]?.checksum == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "the empty asset's checksum is the SHA-256 of nothing")
            for (name, bytes) in files {
                let again = await fixture.upload(bytes, token: phone)  // another device, the same bytes
                #expect(again.checksum == uploads[name]?.checksum, "re-upload of \(name)")
                uploads[name] = again
            }
            let distinct = sizes.count * 2 - 1, distinctBytes = sizes.reduce(0, +) * 2
            let stored = try await Self.query(fixture, "SELECT count(*) || ' ' || count(*) FILTER (WHERE complete) || ' ' || COALESCE(sum(size), 0) FROM assets")
            #expect(stored == "\(distinct) \(distinct) \(distinctBytes)", "assets rows (all, complete, bytes): identical bytes are stored once")
            let chunkBytes = try await Self.query(fixture, "SELECT COALESCE(sum(length(bytes)), 0)::text FROM asset_chunks")
            #expect(chunkBytes == "\(distinctBytes)")
            let bad = try await Self.query(fixture, """
                SELECT count(*)::text FROM assets a WHERE a.size <> COALESCE((SELECT sum(length(c.bytes)) FROM asset_chunks c WHERE c.asset_id = a.id), 0)
                OR (SELECT count(*) FROM asset_chunks c WHERE c.asset_id = a.id) <> COALESCE((SELECT max(c.n) + 1 FROM asset_chunks c WHERE c.asset_id = a.id), 0)
                """)
            #expect(bad == "0", "every asset's chunks add up to its size, numbered 0..n-1")

            let names = files.keys.sorted()
            let operations = names.map { #"{"operationType":"create","record":{"recordName":"\#($0)","recordType":"Blob","fields":{"data":\#(uploads[$0]?.field ?? "")}}}"# }
            let saved = await fixture.database("records/modify", token: mac, #"{"operations":[\#(operations.joined(separator: ","))]}"#)
            #expect(saved.itemCodes == names.map { _ in "ok" }, "\(saved)")
            for name in names {
                let asset = saved.asset(name)
                #expect(asset?["downloadURL"]?.stringValue?.hasPrefix(APIFixture.origin + "/assets/1/download/") == true, "\(name): \(String(describing: asset))")
                #expect(asset?["fileChecksum"]?.stringValue == uploads[name]?.checksum && asset?["size"]?.int64Value == uploads[name]?.size)
                #expect(asset?["receipt"] == nil, "a saved record shows no receipt")
            }
            let lookup = await fixture.database("records/lookup", token: phone, #"{"records":[\#(names.map { #"{"recordName":"\#($0)"}"# }.joined(separator: ","))]}"#)
            for name in names {
                let url = lookup.asset(name)?["downloadURL"]?.stringValue ?? ""
                let sink = fixture.start("GET", APIFixture.path(of: url), token: phone)
                let download = await sink.answer()
                #expect(download.status == 200 && download.body == files[name], "\(name): \(download.status), \(download.body.count) bytes")
                #expect(sink.contentLength == files[name]?.count && download.header("ETag") == "\"\(uploads[name]?.checksum ?? "")\"", "\(name)")
            }

            let late = randomBytes(777)
            _ = await fixture.upload(late, token: phone)
            _ = await fixture.upload(late, token: mac)
            #expect(try await Self.query(fixture, "SELECT count(*)::text FROM assets") == "\(distinct + 1)", "the same 777 bytes from two devices: one row")
        }
    }

    @Test func anUploadURLIsSingleUseAndOnlyItsOwners() async throws {
        try await APIFixture.with { fixture in
            let mac = try await fixture.token(device: "mac-mini"), phone = try await fixture.token(device: "iphone")
            let bob = try await fixture.token(user: "bob", device: "bob-mac")
            let small = randomBytes(1000)
            let url = await fixture.uploadURL(token: mac)
            for (token, headers, status, code) in [(bob, HTTPHeadersLiteral.none, 404, "NOT_FOUND"), (nil, .none, 401, "AUTHENTICATION_REQUIRED"),
                                                   ("not-a-token", .none, 401, "AUTHENTICATION_FAILED"), (nil, .basic, 401, "AUTHENTICATION_FAILED")] {
                let refused = await fixture.post(small, to: url, token: token, headers: headers.headers)
                #expect(refused.status == status && refused.serverErrorCode == code, "\(token ?? "no token") \(headers): \(refused)")
            }
            let uploaded = UploadedFile(await fixture.post(small, to: url, token: phone))
            #expect(uploaded.answer.status == 200 && uploaded.checksum == checksum(small), "alice's other device uses the URL after the refusals")
            let used = await fixture.post(small, to: url, token: mac)
            #expect(used.status == 404 && used.serverErrorCode == "NOT_FOUND", "a used upload URL: \(used)")
            let unknown = await fixture.post(small, to: APIFixture.origin + "/assets/1/upload/doesnotexist", token: bob)
            #expect(unknown.status == 404 && unknown.serverErrorCode == "NOT_FOUND", "\(unknown)")
        }
    }

    @Test func aDownloadIsOnlyItsOwners() async throws {
        try await APIFixture.with { fixture in
            let mac = try await fixture.token(device: "mac-mini")
            let phone = try await fixture.database.store.accounts.issueToken(user: "alice", device: "iphone")
            let bob = try await fixture.token(user: "bob", device: "bob-mac")
            let small = randomBytes(1000)
            let uploaded = await fixture.upload(small, token: mac)
            let saved = await fixture.database("records/modify", token: mac,
                                               #"{"operations":[{"operationType":"create","record":{"recordName":"small","recordType":"Blob","fields":{"data":\#(uploaded.field)}}}]}"#)
            let url = saved.asset("small")?["downloadURL"]?.stringValue ?? ""
            #expect(await fixture.get(url, token: phone.secret).body == small, "alice's phone downloads")
            let tampered = String(url.dropLast()) + (url.last == "A" ? "B" : "A")
            let cases: [(String, String?, String, Int, String)] = [
                (url, bob, "GET", 404, "NOT_FOUND"), (url, nil, "GET", 401, "AUTHENTICATION_REQUIRED"),
                (url, "not-a-token", "GET", 401, "AUTHENTICATION_FAILED"), (tampered, phone.secret, "GET", 404, "NOT_FOUND"),
            ]
            for (target, token, method, status, code) in cases {
                let answer = await fixture.get(target, token: token, method: method)
                #expect(answer.status == status && answer.serverErrorCode == code, "\(target) \(token ?? "no token"): \(answer)")
            }
            #expect(await fixture.get(url, token: bob, method: "HEAD").status == 404, "bob's HEAD")
            try await fixture.database.store.accounts.revokeToken(tokenID: phone.tokenID)
            let revoked = await fixture.get(url, token: phone.secret)
            #expect(revoked.status == 401 && revoked.serverErrorCode == "AUTHENTICATION_FAILED", "a revoked token: \(revoked)")
        }
    }
}

/// Header sets the upload cases use.
enum HTTPHeadersLiteral: CustomStringConvertible {
    case none, basic
    var headers: HTTPHeaders { self == .basic ? ["Authorization": "Basic YWxpY2U6cHc="] : [:] }
    var description: String { self == .basic ? "Basic" : "" }
}
