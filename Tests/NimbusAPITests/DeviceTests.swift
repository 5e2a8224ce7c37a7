import Foundation
import NimbusAPI
import NimbusCore
import NimbusStore
import NimbusSupport
import Testing

/// Devices (the domain part of the curl scenario 39; docs/api.md "Devices"): a code enrolls once,
/// in any case and spacing, on any instance; wrong and used codes get one answer; bad input is a 400
/// that creates nothing and keeps the code; the cap of pending codes; GET /devices and revocation.
/// (The CLI's `device pair` and QR code, real client addresses, /metrics and secrecy in dumps and
/// logs stay in the scenario.)
@Suite struct DeviceTests {
    private static func enroll(_ api: APIFixture, _ body: String) async -> Answer {
        await api.send("POST", "/devices/enroll", body: body)
    }

    private static func tokenCount(_ api: APIFixture) async throws -> Int {
        try await api.database.run { try $0.queryFirst("SELECT count(*) FROM device_tokens") { try $0.int(0) } } ?? -1
    }

    @Test func aCodeEnrollsOnceInAnyCaseOnAnyInstanceAndTheTokenWorksAtOnce() async throws {
        try await APIFixture.with { first in
            let second = APIFixture(database: first.database, api: API(store: try await Store.open(pool: first.database.pool), limits: Limits()))
            let mac = try await first.token(device: "alice's mac")
            let pair = await first.send("POST", "/devices/pair", token: mac, body: #"{"deviceName":"iphone"}"#)
            let code = try #require(pair.json["code"]?.stringValue, "\(pair)")
            #expect(code.wholeMatch(of: /[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{2}/) != nil, "code \(code)")
            let url = pair.json["pairingURL"]?.stringValue ?? ""
            #expect(url.hasPrefix("nimbus://pair?server=") && url.hasSuffix("&code=\(code.replacingOccurrences(of: "-", with: ""))"), "\(pair)")
            let now = Int64(Date().timeIntervalSince1970 * 1000), expires = pair.json["expiresAt"]?.int64Value ?? 0
            #expect(expires > now + 590_000 && expires <= now + 601_000, "expiresAt \(expires) is not about 600 s from \(now)")

            let before = try await Self.tokenCount(first)
            // Lower case with a space for the first dash, on the other instance.
            let spoken = code.lowercased().replacingOccurrences(of: "-", with: " ", options: [], range: code.range(of: "-"))
            let enrolled = await Self.enroll(second, #"{"code":"\#(spoken)","deviceName":"ipad"}"#)
            #expect(enrolled.status == 200 && enrolled.json["deviceName"]?.stringValue == "ipad", "\(enrolled)")
            let token = try #require(enrolled.json["token"]?.stringValue)
            #expect(enrolled.json["tokenID"]?.stringValue?.hasPrefix("tok_") == true)
            #expect(await first.getDatabase("users/current", token: token).status == 200)
            #expect(try await Self.tokenCount(first) == before + 1)
            #expect(try await first.database.store.accounts.listTokens(user: "alice").contains { $0.tokenID == enrolled.json["tokenID"]?.stringValue })

            // Two concurrent enrolls with one code on two instances: exactly one wins.
            let next = try #require(await first.send("POST", "/devices/pair", token: mac, body: "{}").json["code"]?.stringValue)
            async let a = Self.enroll(first, #"{"code":"\#(next)","deviceName":"iphone"}"#)
            async let b = Self.enroll(second, #"{"code":"\#(next)","deviceName":"iphone"}"#)
            let answers = await [a, b]
            #expect(answers.map(\.status).sorted() == [200, 401], "\(answers)")
            let used = try #require(answers.first { $0.status == 401 })
            let wrong = await Self.enroll(first, #"{"code":"0000-0000-00","deviceName":"x"}"#)
            #expect(wrong.status == 401 && wrong.serverErrorCode == "AUTHENTICATION_FAILED" && wrong.json.isErrorBody, "\(wrong)")
            #expect(wrong.reason == used.reason, "a wrong code and a used code are answered differently: \(wrong) / \(used)")
            #expect(await Self.enroll(first, #"{"code":"\#(next)","deviceName":"iphone"}"#).status == 401, "the used code again")
        }
    }

    @Test func badEnrollmentsAre400CreateNothingAndKeepTheCode() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac")
            _ = try await api.token(device: "iphone")
            let good = try #require(await api.send("POST", "/devices/pair", token: mac, body: "{}").json["code"]?.stringValue)
            let before = try await Self.tokenCount(api)
            for bad in [#"{"code":"ABCD-EFGH-J","deviceName":"x"}"#, #"{"code":"ABCD-EFGH-JKL","deviceName":"x"}"#, #"{"code":"ABCD-EFGH-JU","deviceName":"x"}"#,
                        #"{"code":"","deviceName":"x"}"#, #"{"code":12,"deviceName":"x"}"#, #"{"deviceName":"x"}"#,
                        #"{"code":"\#(good)"}"#, #"{"code":"\#(good)","deviceName":""}"#, #"{"code":"\#(good)","deviceName":"a\nb"}"#,
                        #"{"code":"\#(good)","deviceName":"\#(String(repeating: "x", count: 256))"}"#, #"{"code":"\#(good)","deviceName":7}"#,
                        #"{"code":"\#(good)","deviceName":"iphone"}"#, "[1]", "not json"] {
                let answer = await Self.enroll(api, bad)
                #expect(answer.status == 400 && answer.serverErrorCode == "BAD_REQUEST" && answer.json.isErrorBody, "enroll with \(bad.prefix(60)): \(answer)")
            }
            let taken = await Self.enroll(api, #"{"code":"\#(good)","deviceName":"iphone"}"#)
            #expect(taken.reason.contains("deviceName") && taken.reason.contains("iphone") && taken.reason.contains("already"), "\(taken)")
            #expect(try await Self.tokenCount(api) == before, "bad enrollments created tokens")
            #expect(await Self.enroll(api, #"{"code":"\#(good)","deviceName":"ipad"}"#).status == 200, "the code refused only for bad input no longer works")
        }
    }

    @Test func pendingCodesAreCappedAndPairingNeedsAToken() async throws {
        var limits = Limits()
        limits.maxPendingPairingCodes = 3
        try await APIFixture.with(limits: limits) { api in
            let mac = try await api.token(device: "mac")
            for _ in 1...3 { #expect(await api.send("POST", "/devices/pair", token: mac, body: "{}").status == 200) }
            let refused = await api.send("POST", "/devices/pair", token: mac, body: "{}")
            #expect(refused.status == 429 && refused.serverErrorCode == "THROTTLED", "\(refused)")
            let anonymous = await api.send("POST", "/devices/pair", body: "{}")
            #expect(anonymous.status == 401 && anonymous.serverErrorCode == "AUTHENTICATION_REQUIRED", "\(anonymous)")
        }
    }

    @Test func aDeviceListsItsUsersDevicesAndRevokesThemOrItself() async throws {
        try await APIFixture.with { api in
            let mac = try await api.issue(device: "mac"), phone = try await api.issue(device: "phone"), ipad = try await api.issue(device: "ipad")
            let bob = try await api.issue(user: "bob", device: "mac")
            let devices = await api.send("GET", "/devices", token: mac.secret)
            let ids = devices.items("devices").compactMap { $0["tokenID"]?.stringValue }
            #expect(Set(ids) == [mac.tokenID, phone.tokenID, ipad.tokenID], "\(devices)")
            let current = devices.items("devices").filter { $0["current"]?.boolValue == true }
            #expect(current.count == 1 && current.first?["tokenID"]?.stringValue == mac.tokenID, "\(devices)")

            let revoked = await api.send("POST", "/devices/revoke", token: mac.secret, body: #"{"tokenID":"\#(phone.tokenID)"}"#)
            #expect(revoked.status == 200 && revoked.json["revoked"]?.boolValue == true, "\(revoked)")
            let after = await api.getDatabase("users/current", token: phone.secret)
            #expect(after.status == 401 && after.serverErrorCode == "AUTHENTICATION_FAILED", "\(after)")
            let foreign = await api.send("POST", "/devices/revoke", token: mac.secret, body: #"{"tokenID":"\#(bob.tokenID)"}"#)
            #expect(foreign.status == 404 && foreign.serverErrorCode == "NOT_FOUND", "\(foreign)")
            #expect(await api.getDatabase("users/current", token: bob.secret).status == 200)
            for bad in ["{}", #"{"tokenID":""}"#, #"{"tokenID":5}"#] {
                let answer = await api.send("POST", "/devices/revoke", token: mac.secret, body: bad)
                #expect(answer.status == 400 && answer.serverErrorCode == "BAD_REQUEST", "revoke with \(bad): \(answer)")
            }
            #expect(await api.send("POST", "/devices/revoke", token: ipad.secret, body: #"{"tokenID":"\#(ipad.tokenID)"}"#).status == 200)
            #expect(await api.getDatabase("users/current", token: ipad.secret).status == 401, "the ipad after signing out")
            #expect(await api.getDatabase("users/current", token: mac.secret).status == 200)
            let listed = try await api.database.store.accounts.listTokens(user: "alice")
            #expect(listed.contains { $0.tokenID == phone.tokenID && $0.revokedAt != nil }, "the phone is not listed revoked")
        }
    }
}
