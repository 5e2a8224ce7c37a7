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
        var throttle = EnrollmentThrottle(perAddress: 10, overall: 100)
        for second in 0..<10 {
            #expect(throttle.admit("10.0.0.1", now: Int64(second) * 1000) == .admitted)
            throttle.recordFailure("10.0.0.1", now: Int64(second) * 1000)
        }
        // The first failure (t = 0) leaves the window at t = 60 s.
        #expect(throttle.admit("10.0.0.1", now: 10_000) == .refused(retryAfterSeconds: 50, scope: .address))
        #expect(throttle.admit("10.0.0.1", now: 59_999) == .refused(retryAfterSeconds: 1, scope: .address))
        #expect(throttle.admit("10.0.0.1", now: 60_000) == .admitted)
        #expect(throttle.admit("10.0.0.2", now: 10_000) == .admitted)
    }

    @Test func theServerWideCapHoldsAcrossAddresses() {
        var throttle = EnrollmentThrottle(perAddress: 10, overall: 25)
        for index in 0..<25 {
            let address = "10.0.\(index / 5).1"
            #expect(throttle.admit(address, now: 1000) == .admitted)
            throttle.recordFailure(address, now: 1000)
        }
        #expect(throttle.admit("192.168.1.1", now: 2000) == .refused(retryAfterSeconds: 59, scope: .server))
        #expect(throttle.admit("192.168.1.1", now: 61_000) == .admitted)
    }

    @Test func zeroMeansNoLimitAndMemoryStaysBounded() {
        var unlimited = EnrollmentThrottle(perAddress: 0, overall: 0)
        for index in 0..<1000 { unlimited.recordFailure("a", now: Int64(index)) }
        #expect(unlimited.admit("a", now: 1000) == .admitted)
        var throttle = EnrollmentThrottle(perAddress: 3, overall: 10)
        for index in 0..<5000 { throttle.recordFailure("10.\(index / 256).\(index % 256).1", now: 0) }
        #expect(throttle.rememberedAddresses == 5000)
        _ = throttle.admit("x", now: 120_000)
        #expect(throttle.rememberedAddresses == 0)
    }
}
