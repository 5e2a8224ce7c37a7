import Foundation
import NimbusHTTP
import NimbusSupport
import Testing

/// The isolation matrix's asset and notification-channel rows (were the curl scenario 80): two
/// users, each owning an uploaded asset and its download URL, an unused upload URL, an asset
/// receipt, and a notification channel (holding a notification of the asset's record) and its
/// cursor. Each sends those routes with the other's
/// URLs and ids and with one that exists nowhere (the opaque value with one character changed);
/// the two answers must be identical, normalized as `IsolationMatrixTests` does. Listings (Blob
/// queries, tokens/create, the own channel) mention none of the other's names, and the owners'
/// objects are untouched afterwards.
@Suite struct IsolationMatrixAssetTests {
    /// One user's objects (paths, not absolute URLs).
    private struct Objects: Sendable {
        var token = "", bytes: [UInt8] = [], receipt = "", checksum = "", download = "", upload = "", channel = "", cursor = ""
    }

    private static func setUp(_ api: APIFixture, _ user: String) async throws -> Objects {
        var o = Objects()
        // Devices named apart: a channel leaves out its own device's notifications, and a device name is per user.
        o.token = try await api.token(user: user, device: "\(user)-mac")
        o.bytes = randomBytes(3000)
        // A subscription that fires on the photo: the owner's channel holds a notification naming it.
        let subscription = await api.database("subscriptions/modify", token: o.token, #"""
            {"operations":[{"operationType":"create","subscription":{"subscriptionID":"\#(user)-sub","subscriptionType":"query","query":{"recordType":"Blob"},"firesOn":["create"]}}]}
            """#)
        try #require(subscription.status == 200 && subscription.items("subscriptions").count == 1 && subscription.items("subscriptions")[0]["serverErrorCode"] == nil, "\(subscription)")
        let uploaded = await api.upload(o.bytes, token: o.token)
        o.receipt = uploaded.receipt
        o.checksum = uploaded.checksum
        let photo = await api.modify(o.token, [Op.record("create", "\(user)-photo", "Blob", fields: #"{"data":\#(uploaded.field)}"#)])
        try #require(photo.codes == ["ok"], "\(user)'s photo: \(photo)")
        o.download = APIFixture.path(of: try #require(photo.asset("\(user)-photo")?["downloadURL"]?.stringValue, "\(photo)"))
        o.upload = APIFixture.path(of: await api.uploadURL(token: o.token))
        let channel = await api.database("tokens/create", token: o.token)
        o.channel = APIFixture.path(of: try #require(channel.json["webcourierURL"]?.stringValue, "\(channel)"))
        o.cursor = try #require(channel.json["cursor"]?.stringValue, "\(channel)")
        for value in [o.receipt, o.checksum, o.upload, o.channel, o.cursor] { try #require(!value.isEmpty && !value.hasPrefix("no "), "\(user): \(o)") }
        return o
    }

    /// How a probe sends its request, with the value in place of @.
    private enum Kind {
        case operation(String), get(HTTPHeaders), head, post
    }

    /// The probes of `viewer` against `owner`'s objects; answers the leaks found and the number of checks.
    private static func matrix(_ api: APIFixture, viewer: String, _ v: Objects, owner o: String, _ objects: Objects) async -> (leaks: [String], checks: Int) {
        var leaks: [String] = [], checks = 0
        let m = "nowhere-\(viewer)"
        func send(_ kind: Kind, _ template: String, _ value: String) async -> Answer {
            let filled = template.replacingOccurrences(of: "@", with: value)
            switch kind {
            case .operation(let operation): return await api.database(operation, token: v.token, filled)
            case .get(let headers): return await api.get(filled, token: v.token, headers: headers)
            case .head: return await api.get(filled, token: v.token, method: "HEAD")
            case .post: return await api.post(Array("bob was here".utf8), to: filled, token: v.token)
            }
        }
        func probe(_ what: String, _ kind: Kind, _ template: String, _ foreign: String, _ missing: String) async {
            checks += 1
            let a = IsolationMatrixTests.normalized(await send(kind, template, foreign), foreign)
            let b = IsolationMatrixTests.normalized(await send(kind, template, missing), missing)
            if a != b { leaks.append("LEAK \(viewer)→\(o) \(what):\n  foreign: \(a.prefix(400))\n  missing: \(b.prefix(400))") }
        }
        func unlisted(_ what: String, _ kind: Kind, _ template: String) async {
            checks += 1
            let answer = await send(kind, template, "")
            if answer.status != 200 { leaks.append("\(what): status \(answer)") }
            let text = String(decoding: answer.body, as: UTF8.self)
            for needle in ["\(o)-", lastComponent(objects.channel), lastComponent(objects.download)] where text.contains(needle) {
                leaks.append("LEAK \(viewer)→\(o) \(what) mentions \(needle): \(text.prefix(400))")
            }
        }
        let forge = IsolationMatrixTests.forge

        await probe("records/lookup desiredKeys", .operation("records/lookup"), #"{"records":[{"recordName":"@"}],"desiredKeys":["text"]}"#, "\(o)-photo", "\(m)-photo")
        let stolen = Op.record("create", "\(viewer)-stolen", "Blob", fields: #"{"data":\#(assetField(checksum: objects.checksum, size: 3000, receipt: "@"))}"#)
        await probe("records/modify asset receipt", .operation("records/modify"), #"{"operations":[\#(stolen)]}"#, objects.receipt, forge(objects.receipt))

        // assets
        await probe("upload URL", .post, "@", objects.upload, forge(objects.upload))
        await probe("download URL", .get([:]), "@", objects.download, forge(objects.download))
        await probe("download URL, HEAD", .head, "@", objects.download, forge(objects.download))
        await probe("download URL, Range", .get(["Range": "bytes=0-9"]), "@", objects.download, forge(objects.download))
        let etag = "\"\(checksum(objects.bytes))\""
        await probe("download URL, If-None-Match", .get(["If-None-Match": etag]), "@", objects.download, forge(objects.download))

        // notification channels
        await probe("webcourier channel", .get([:]), "@", objects.channel, forge(objects.channel))
        await probe("webcourier channel, since", .get([:]), "@?since=\(objects.cursor)", objects.channel, forge(objects.channel))
        await probe("webcourier channel, wait", .get([:]), "@?wait=1", objects.channel, forge(objects.channel))
        await probe("webcourier own channel, foreign cursor", .get([:]), "\(v.channel)?since=@", objects.cursor, forge(objects.cursor))

        // listings: nothing of the owner's
        await unlisted("records/query Blob", .operation("records/query"), #"{"query":{"recordType":"Blob"}}"#)
        await unlisted("tokens/create", .operation("tokens/create"), "{}")
        await unlisted("webcourier own channel", .get([:]), v.channel)
        return (leaks, checks)
    }

    private static func lastComponent(_ path: String) -> String {
        String(path.split(separator: "/").last ?? Substring(path))
    }

    @Test func eachUsersAssetsAndChannelsAnswerAsOnesThatExistNowhere() async throws {
        try await APIFixture.with(limits: .unthrottled) { api in
            let alice = try await Self.setUp(api, "alice"), bob = try await Self.setUp(api, "bob")
            let bobOnAlice = await Self.matrix(api, viewer: "bob", bob, owner: "alice", alice)
            let aliceOnBob = await Self.matrix(api, viewer: "alice", alice, owner: "bob", bob)
            let leaks = bobOnAlice.leaks + aliceOnBob.leaks
            #expect(leaks.isEmpty, "\(leaks.count) leaks in \(bobOnAlice.checks + aliceOnBob.checks) checks:\n\(leaks.joined(separator: "\n"))")
            #expect(bobOnAlice.checks + aliceOnBob.checks == 28)
            for (user, objects) in [("alice", alice), ("bob", bob)] {
                let download = await api.get(objects.download, token: objects.token)
                #expect(download.status == 200 && download.body == objects.bytes, "\(user)'s asset: \(download.status)")
                let channel = await api.get("\(objects.channel)?since=\(objects.cursor)", token: objects.token)
                #expect(channel.status == 200, "\(user)'s channel: \(channel)")
                // What the listings must not show the other user: the owner's other device sees it.
                let history = await api.get(objects.channel, token: try await api.token(user: user, device: "phone"))
                #expect(String(decoding: history.body, as: UTF8.self).contains("\(user)-photo"), "\(user)'s channel from the start: \(history)")
                let upload = await api.post(objects.bytes, to: objects.upload, token: objects.token)
                #expect(upload.status == 200, "\(user)'s unused upload URL: \(upload)")
            }
        }
    }
}
