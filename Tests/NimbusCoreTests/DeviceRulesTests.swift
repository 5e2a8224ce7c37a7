import NimbusSupport
@testable import NimbusCore
import Testing

/// Pairing codes, device names and the enrollment throttle (docs/api.md "Devices").
@Suite struct DeviceRulesTests {
    @Test func freshCodesAreTenSymbolsOfTheAlphabetShownFourFourTwo() throws {
        var random = SplitMix64(seed: 1)
        var seen = Set<String>()
        for _ in 0..<2000 {
            let code = PairingCode(using: &random)
            #expect(code.text.count == 10)
            #expect(code.text.utf8.allSatisfy { PairingCode.alphabet.contains($0) })
            let display = Array(code.display)
            #expect(display.count == 12 && display[4] == "-" && display[9] == "-")
            #expect(try PairingCode(entered: code.display) == code)
            seen.insert(code.text)
        }
        #expect(seen.count == 2000)
    }

    @Test(arguments: ["ABCD-EFGH-JK", "abcd-efgh-jk", "ABCDEFGHJK", "ab cd ef gh jk", " A-B-C-D-E-F-G-H-J-K ", "AbCd EfGh-jK"])
    func caseDashesAndSpacesAreIgnored(entered: String) throws {
        #expect(try PairingCode(entered: entered).text == "ABCDEFGHJK")
    }

    @Test(arguments: [("", PairingCode.Problem.empty), ("- -", .empty), ("ABCD-EFGH-J", .wrongLength(9)),
                      ("ABCD-EFGH-JKM", .wrongLength(11)), ("ABCD-EFGH-JU", .badCharacter("U")), ("ABCD-EFGH-JI", .badCharacter("I")),
                      ("ABCD-EFGH-JO", .badCharacter("O")), ("ABCD-EFGH-Jl", .badCharacter("l")), ("ABCD_EFGH_JK", .badCharacter("_")),
                      ("ABCD-EFGH-JÉ", .badCharacter("É"))])
    func malformedCodesAreRefusedNeverGuessed(entered: String, problem: PairingCode.Problem) {
        #expect(throws: problem) { try PairingCode(entered: entered) }
        #expect(!problem.reason.isEmpty)
    }

    @Test func thePairingURLPercentEncodesTheServer() throws {
        let code = try PairingCode(entered: "ABCD-EFGH-JK")
        #expect(PairingURL.make(server: "https://sync.example.com:8443/base path", code: code)
            == "nimbus://pair?server=https%3A%2F%2Fsync.example.com%3A8443%2Fbase%20path&code=ABCDEFGHJK")
    }

    @Test(arguments: ["iphone", "Alice's iPhone 15", "📱", String(repeating: "x", count: 255)])
    func acceptableDeviceNames(name: String) {
        #expect(DeviceName.problem(name) == nil)
    }

    @Test(arguments: ["", String(repeating: "x", count: 256), "a\nb", "a\rb", "a\u{0}b", "tab\there"])
    func refusedDeviceNames(name: String) {
        #expect(DeviceName.problem(name) != nil)
    }

    @Test func theEleventhFailureFromOneAddressWithinAMinuteIsRefused() {
        let throttle = EnrollmentThrottle(perAddress: 10, overall: 100)
        let failures = (0..<10).map { Int64($0) * 1000 }
        #expect(throttle.decide(.init(overall: Array(failures.prefix(9)), fromAddress: Array(failures.prefix(9))), now: 9_000) == .admitted)
        let ten = EnrollmentThrottle.Recent(overall: failures, fromAddress: failures)
        // The first failure (t = 0) leaves the window at t = 60 s; only failures after
        // now - 60 s count, whatever the store passes.
        #expect(throttle.decide(ten, now: 10_000) == .refused(retryAfterSeconds: 50, scope: .address))
        #expect(throttle.decide(ten, now: 59_999) == .refused(retryAfterSeconds: 1, scope: .address))
        #expect(throttle.decide(ten, now: 60_000) == .admitted)
        #expect(throttle.decide(.init(overall: failures, fromAddress: []), now: 10_000) == .admitted)
    }

    @Test func theServerWideLimitHoldsAcrossAddressesAndIsNamedFirst() {
        let throttle = EnrollmentThrottle(perAddress: 10, overall: 25)
        let all = Array(repeating: Int64(1000), count: 25)
        #expect(throttle.decide(.init(overall: Array(all.prefix(24)), fromAddress: []), now: 2000) == .admitted)
        #expect(throttle.decide(.init(overall: all, fromAddress: []), now: 2000) == .refused(retryAfterSeconds: 59, scope: .server))
        #expect(throttle.decide(.init(overall: all, fromAddress: Array(all.prefix(10))), now: 2000)
            == .refused(retryAfterSeconds: 59, scope: .server))
        #expect(throttle.decide(.init(overall: all, fromAddress: []), now: 61_000) == .admitted)
    }

    @Test func retryAfterWaitsForTheFailureThatHoldsTheCountAtItsLimit() {
        // Three failures at 0, 30 s and 50 s with a limit of 2: the count falls below 2 when the
        // one at 30 s leaves (t = 90 s), not when the oldest does.
        let throttle = EnrollmentThrottle(perAddress: 2, overall: 0)
        let recent = EnrollmentThrottle.Recent(overall: [], fromAddress: [0, 50_000, 30_000])
        #expect(throttle.decide(recent, now: 55_000) == .refused(retryAfterSeconds: 35, scope: .address))
        #expect(throttle.decide(recent, now: 60_000) == .refused(retryAfterSeconds: 30, scope: .address))
        #expect(throttle.decide(recent, now: 90_000) == .admitted)
    }

    @Test func aFailureStampedAfterNowWaitsNoLongerThanTheWindow() {
        // Two instances: a failure written by one whose request began 500 ms later than this
        // one's `now` still asks for 60 s at most (Retry-After once said 61 in scenario 84).
        let throttle = EnrollmentThrottle(perAddress: 2, overall: 0)
        let recent = EnrollmentThrottle.Recent(overall: [], fromAddress: [10_400, 10_500])
        #expect(throttle.decide(recent, now: 10_000) == .refused(retryAfterSeconds: 60, scope: .address))
        #expect(throttle.decide(recent, now: 10_200) == .refused(retryAfterSeconds: 60, scope: .address))
    }

    @Test func zeroTurnsALimitOff() {
        let many = Array(repeating: Int64(0), count: 1000)
        #expect(!EnrollmentThrottle(perAddress: 0, overall: 0).isOn)
        #expect(EnrollmentThrottle(perAddress: 0, overall: 0).decide(.init(overall: many, fromAddress: many), now: 1) == .admitted)
        #expect(EnrollmentThrottle(perAddress: 0, overall: 5).decide(.init(overall: [], fromAddress: many), now: 1) == .admitted)
        #expect(EnrollmentThrottle(perAddress: 5, overall: 0).decide(.init(overall: many, fromAddress: []), now: 1) == .admitted)
    }
}
