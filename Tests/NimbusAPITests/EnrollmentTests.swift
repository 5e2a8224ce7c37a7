import Foundation
import NimbusAPI
import NimbusCore
import NimbusStore
import NimbusSupport
import Testing

/// `POST /devices/enroll` through the API in-process (docs/api.md "Devices"): the failure limits
/// hold for the whole server and against a burst, a device name is one device's, and a revoked
/// device's codes are void. Every request here comes from one client address.
@Suite struct EnrollmentTests {
    private static func enroll(_ api: APIFixture, code: String, name: String) async -> Answer {
        await api.send("POST", "/devices/enroll", body: #"{"code":"\#(code)","deviceName":"\#(name)"}"#)
    }

    /// A fresh code of alice's, asked for by her device with `token`.
    private static func pair(_ api: APIFixture, token: String) async throws -> String {
        let answer = await api.send("POST", "/devices/pair", token: token, body: "{}")
        try #require(answer.status == 200, "\(answer)")
        return try #require(answer.json["code"]?.stringValue)
    }

    private static func statuses(_ answers: [Answer]) -> [Int: Int] {
        answers.reduce(into: [:]) { $0[$1.status, default: 0] += 1 }
    }

    @Test func aBurstOfWrongCodesFromOneAddressGetsExactlyTheLimitOfChecks() async throws {
        var limits = Limits()
        limits.enrollFailuresPerMinutePerAddress = 10
        try await APIFixture.with(limits: limits) { api in
            let answers = await withTaskGroup(of: Answer.self) { group in
                for index in 0..<40 {
                    group.addTask { await Self.enroll(api, code: "ZZZZ-ZZZZ-\(index % 10)\(index / 10)", name: "x") }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Self.statuses(answers) == [401: 10, 429: 30], "\(answers.map(\.status))")
            for refused in answers where refused.status == 429 {
                #expect(refused.serverErrorCode == "THROTTLED")
                let seconds = Int(refused.headers["Retry-After"] ?? "") ?? 0
                #expect((55...60).contains(seconds), "Retry-After \(seconds)")
            }
        }
    }

    @Test func twoInstancesCountFailuresTogether() async throws {
        var limits = Limits()
        limits.enrollFailuresPerMinutePerAddress = 0
        limits.enrollFailuresPerMinute = 6
        try await APIFixture.with(limits: limits) { first in
            let second = APIFixture(database: first.database,
                                    api: API(store: try await Store.open(pool: first.database.pool), limits: limits))
            for index in 0..<6 {
                let instance = index % 2 == 0 ? first : second
                #expect(await Self.enroll(instance, code: "ZZZZ-ZZZZ-Y\(index)", name: "x").status == 401)
            }
            let mac = try await first.token(device: "mac")
            let code = try await Self.pair(first, token: mac)
            for instance in [first, second] {
                let refused = await Self.enroll(instance, code: code, name: "phone")
                #expect(refused.status == 429 && refused.reason.contains("enrollFailuresPerMinute is 6"), "\(refused)")
            }
        }
    }

    @Test func successesAndBadInputDoNotCountAsFailures() async throws {
        var limits = Limits()
        limits.enrollFailuresPerMinutePerAddress = 2
        limits.maxPendingPairingCodes = 10
        try await APIFixture.with(limits: limits) { api in
            let mac = try await api.token(device: "mac")
            for index in 0..<4 {
                let code = try await Self.pair(api, token: mac)
                #expect(await Self.enroll(api, code: code, name: "mac").status == 400)
                #expect(await Self.enroll(api, code: code, name: "phone \(index)").status == 200)
            }
            let rows = try await api.database.run { try $0.queryFirst("SELECT count(*) FROM enrollment_failures") { try $0.int(0) } }
            #expect(rows == 0)
            #expect(await Self.enroll(api, code: "ZZZZ-ZZZZ-ZZ", name: "x").status == 401)
            #expect(await Self.enroll(api, code: "ZZZZ-ZZZZ-ZY", name: "x").status == 401)
            #expect(await Self.enroll(api, code: "ZZZZ-ZZZZ-ZX", name: "x").status == 429)
        }
    }

    /// The answers to concurrent enrollments with one name. (The race itself, which requests
    /// through the API rarely hit, is DeviceNameTests.concurrentEnrollmentsWithOneNameMakeOneToken.)
    @Test func concurrentEnrollmentsWithOneNameMakeOneDevice() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac")
            var codes: [String] = []
            for _ in 0..<5 { codes.append(try await Self.pair(api, token: mac)) }
            let answers = await withTaskGroup(of: Answer.self) { group in
                for code in codes { group.addTask { await Self.enroll(api, code: code, name: "iphone") } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Self.statuses(answers) == [200: 1, 400: 4], "\(answers)")
            for refused in answers where refused.status == 400 {
                #expect(refused.reason.contains("\"iphone\" is already the name"), "\(refused)")
            }
            let devices = await api.send("GET", "/devices", token: mac)
            #expect(devices.items("devices").compactMap { $0["deviceName"]?.stringValue }.sorted() == ["iphone", "mac"])
        }
    }

    @Test func aRevokedDevicesCodesStopCountingTowardTheCap() async throws {
        var limits = Limits()
        limits.maxPendingPairingCodes = 2
        try await APIFixture.with(limits: limits) { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            _ = try await Self.pair(api, token: phone)
            _ = try await Self.pair(api, token: phone)
            #expect(await api.send("POST", "/devices/pair", token: mac, body: "{}").status == 429)
            let devices = await api.send("GET", "/devices", token: mac)
            let phoneID = try #require(devices.items("devices").first { $0["deviceName"]?.stringValue == "phone" }?["tokenID"]?.stringValue)
            #expect(await api.send("POST", "/devices/revoke", token: mac, body: #"{"tokenID":"\#(phoneID)"}"#).status == 200)
            _ = try await Self.pair(api, token: mac)
        }
    }

    @Test func revokingADeviceVoidsTheCodesItAskedFor() async throws {
        try await APIFixture.with { api in
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            let fromPhone = try await Self.pair(api, token: phone)
            let fromMac = try await Self.pair(api, token: mac)
            let devices = await api.send("GET", "/devices", token: mac)
            let phoneID = try #require(devices.items("devices").first { $0["deviceName"]?.stringValue == "phone" }?["tokenID"]?.stringValue)
            #expect(await api.send("POST", "/devices/revoke", token: mac, body: #"{"tokenID":"\#(phoneID)"}"#).status == 200)
            #expect(await Self.enroll(api, code: fromPhone, name: "tablet").status == 401)
            #expect(await Self.enroll(api, code: fromMac, name: "tablet").status == 200)
            // The admin's revocation (`nimbus token revoke`, the console) voids them too.
            let another = try await Self.pair(api, token: mac)
            let macID = try #require(devices.items("devices").first { $0["deviceName"]?.stringValue == "mac" }?["tokenID"]?.stringValue)
            try await api.database.store.accounts.revokeToken(tokenID: macID)
            #expect(await Self.enroll(api, code: another, name: "laptop").status == 401)
        }
    }
}
