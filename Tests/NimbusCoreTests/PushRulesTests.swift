import NimbusCore
import NimbusSupport
import Testing

/// The pure push rules: which push a notification gives, the retry schedule, the registration
/// body's checks, the apns-id, and the operator's settings.
@Suite struct PushRulesTests {
    // MARK: PushKind

    @Test(arguments: ["title", "alertBody", "alertLocalizationKey", "soundName"])
    func anyShownStringMakesAnAlert(member: String) {
        #expect(PushKind.of(notificationInfo: [member: .string("x")]) == .alert)
        #expect(PushKind.of(notificationInfo: [member: .string("x"), "shouldSendContentAvailable": .bool(true)]) == .alert)
    }

    @Test func badgeAloneMakesAnAlertButFalseDoesNot() {
        #expect(PushKind.of(notificationInfo: ["shouldBadge": .bool(true)]) == .alert)
        #expect(PushKind.of(notificationInfo: ["shouldBadge": .bool(false)]) == nil)
        #expect(PushKind.of(notificationInfo: ["shouldBadge": .bool(false), "shouldSendContentAvailable": .bool(true)]) == .background)
    }

    @Test func contentAvailableAloneIsBackgroundAndNothingIsNoPush() {
        #expect(PushKind.of(notificationInfo: ["shouldSendContentAvailable": .bool(true)]) == .background)
        #expect(PushKind.of(notificationInfo: ["shouldSendContentAvailable": .bool(true), "desiredKeys": .array([.string("a")])]) == .background)
        #expect(PushKind.of(notificationInfo: ["shouldSendContentAvailable": .bool(false)]) == nil)
        #expect(PushKind.of(notificationInfo: ["desiredKeys": .array([.string("a")])]) == nil)
        #expect(PushKind.of(notificationInfo: [:]) == nil)
        #expect(PushKind.of(notificationInfo: ["title": .null]) == nil)
    }

    // MARK: PushRetryPolicy

    @Test func backoffDoublesFromOneSecondToTenMinutes() {
        let delays = (1...14).map { PushRetryPolicy.delayMillis(afterAttempts: $0) }
        #expect(delays == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000,
                           600_000, 600_000, 600_000, 600_000])
        #expect(PushRetryPolicy.delayMillis(afterAttempts: Int.max) == 600_000)
        #expect(PushRetryPolicy.delayMillis(afterAttempts: 0) == 1_000)
    }

    @Test func answersMapToTheirDecisions() {
        let now: Int64 = 1_000_000, far: Int64 = 10_000_000_000
        func decide(_ status: Int?, _ reason: String? = nil, retryAfter: Int? = nil, attempts: Int = 1) -> PushDecision {
            PushRetryPolicy.decide(PushAnswer(status: status, reason: reason, retryAfterSeconds: retryAfter), attempts: attempts, now: now, expiresAt: far)
        }
        #expect(decide(200) == .delivered)
        #expect(decide(410, "Unregistered") == .removeRegistration)
        #expect(decide(410) == .removeRegistration)
        #expect(decide(400, "BadDeviceToken") == .removeRegistration)
        #expect(decide(400, "DeviceTokenNotForTopic") == .removeRegistration)
        #expect(decide(400, "BadCollapseId") == .giveUp)
        #expect(decide(400, "TopicDisallowed") == .giveUp)
        #expect(decide(403, "InvalidProviderToken") == .giveUp)
        #expect(decide(413, "PayloadTooLarge") == .giveUp)
        #expect(decide(403, "ExpiredProviderToken") == .retry(at: now + 1_000))
        #expect(decide(429, "TooManyRequests", attempts: 3) == .retry(at: now + 4_000))
        #expect(decide(500) == .retry(at: now + 1_000))
        #expect(decide(503, attempts: 20) == .retry(at: now + 600_000))
        #expect(decide(nil, attempts: 2) == .retry(at: now + 2_000))
    }

    @Test func retryAfterIsAFloorNotACeiling() {
        let now: Int64 = 0, far: Int64 = 1 << 40
        #expect(PushRetryPolicy.decide(PushAnswer(status: 429, retryAfterSeconds: 30), attempts: 1, now: now, expiresAt: far) == .retry(at: 30_000))
        // The backoff is already longer than Retry-After: the backoff wins.
        #expect(PushRetryPolicy.decide(PushAnswer(status: 503, retryAfterSeconds: 1), attempts: 5, now: now, expiresAt: far) == .retry(at: 16_000))
    }

    @Test func aRetryAtOrAfterTheExpiryExpires() {
        let answer = PushAnswer(status: 500)
        #expect(PushRetryPolicy.decide(answer, attempts: 1, now: 0, expiresAt: 1_001) == .retry(at: 1_000))
        #expect(PushRetryPolicy.decide(answer, attempts: 1, now: 0, expiresAt: 1_000) == .expired)
        #expect(PushRetryPolicy.decide(PushAnswer(status: 200), attempts: 1, now: 5_000, expiresAt: 1_000) == .delivered)
    }

    // MARK: PushRegistrationRequest

    private func registration(_ body: String) -> Result<PushRegistrationRequest, SyncError> {
        Result { () throws(SyncError) in
            guard let json = try? JSONValue.parse(Array(body.utf8)) else { throw SyncError(.internalError, "test body does not parse") }
            return try PushRegistrationRequest(body: json)
        }
    }

    @Test func tokensOfSixteenToTwoHundredBytesAreStoredLowerCase() throws {
        let sixteen = String(repeating: "aB", count: 16), twoHundred = String(repeating: "0f", count: 200)
        #expect(try registration(#"{"apnsEnvironment":"production","apnsToken":"\#(sixteen)"}"#).get()
                == PushRegistrationRequest(apnsEnvironment: .production, apnsToken: String(repeating: "ab", count: 16)))
        #expect(try registration(#"{"apnsEnvironment":"development","apnsToken":"\#(twoHundred)"}"#).get().apnsToken == twoHundred)
    }

    @Test func malformedRegistrationsSayWhichMember() {
        func reason(_ body: String) -> String? {
            if case .failure(let error) = registration(body) { return error.code == .badRequest ? error.reason : "not BAD_REQUEST" }
            return nil
        }
        let ok = String(repeating: "ab", count: 32)
        #expect(reason(#"{"apnsEnvironment":"production","apnsToken":"\#(ok)"}"#) == nil)
        #expect(reason(#"{"apnsToken":"\#(ok)"}"#)?.contains("apnsEnvironment is required") == true)
        #expect(reason(#"{"apnsEnvironment":"sandbox","apnsToken":"\#(ok)"}"#)?.contains("apnsEnvironment must be") == true)
        #expect(reason(#"{"apnsEnvironment":1,"apnsToken":"\#(ok)"}"#)?.contains("apnsEnvironment must be") == true)
        #expect(reason(#"{"apnsEnvironment":"production"}"#)?.contains("apnsToken is required") == true)
        #expect(reason(#"{"apnsEnvironment":"production","apnsToken":12}"#)?.contains("apnsToken must be a string") == true)
        #expect(reason(#"{"apnsEnvironment":"production","apnsToken":"\#(ok)a"}"#)?.contains("even number") == true)
        #expect(reason(#"{"apnsEnvironment":"production","apnsToken":"\#(String(repeating: "zz", count: 32))"}"#)?.contains("hexadecimal") == true)
        #expect(reason(#"{"apnsEnvironment":"production","apnsToken":"\#(String(repeating: "ab", count: 15))"}"#)?.contains("encodes 15") == true)
        #expect(reason(#"{"apnsEnvironment":"production","apnsToken":"\#(String(repeating: "ab", count: 201))"}"#)?.contains("encodes 201") == true)
    }

    // MARK: PushIdentifier

    @Test func apnsIDIsAStableVersion8UUIDPerNotificationAndDevice() {
        let id = PushIdentifier.apnsID(notificationID: "6F9619FF-8B86-D011-B42D-00C04FC964FF", deviceTokenID: "tok_a")
        #expect(id == PushIdentifier.apnsID(notificationID: "6f9619ff-8b86-d011-b42d-00c04fc964ff", deviceTokenID: "tok_a"))
        #expect(id != PushIdentifier.apnsID(notificationID: "6f9619ff-8b86-d011-b42d-00c04fc964ff", deviceTokenID: "tok_b"))
        #expect(id != PushIdentifier.apnsID(notificationID: "7f9619ff-8b86-d011-b42d-00c04fc964ff", deviceTokenID: "tok_a"))
        let groups = id.split(separator: "-").map(\.count)
        #expect(groups == [8, 4, 4, 4, 12])
        #expect(id == id.lowercased())
        let characters = Array(id)
        #expect(characters[14] == "8")
        #expect("89ab".contains(characters[19]))
    }

    // MARK: PushSettings

    @Test func settingsParseModesAndTopicMaps() throws {
        #expect(try PushSettings.mode("direct").get() == .direct)
        #expect(try PushSettings.mode("off").get() == .off)
        #expect(try PushSettings.mode("relay").get() == .relay)
        #expect(try PushSettings.topics("").get() == [:])
        #expect(try PushSettings.topics("iCloud.a.B=com.a.B, iCloud.c=com.c-d").get() == ["iCloud.a.B": "com.a.B", "iCloud.c": "com.c-d"])
    }

    @Test func malformedSettingsSayWhich() {
        func message<T>(_ result: Result<T, PushSettingsError>) -> String? {
            if case .failure(let error) = result { return error.message }
            return nil
        }
        #expect(message(PushSettings.mode("on"))?.contains("--push must be off, direct or relay") == true)
        #expect(message(PushSettings.topics("iCloud.a"))?.contains("is not CONTAINER=BUNDLE_ID") == true)
        #expect(message(PushSettings.topics("iCloud.a=,iCloud.b=com.b"))?.contains("bundle id") == true)
        #expect(message(PushSettings.topics("iCloud.a=com a"))?.contains("bundle id") == true)
        #expect(message(PushSettings.topics("bad/container=com.a"))?.contains("not a valid container") == true)
        #expect(message(PushSettings.topics("=com.a"))?.contains("not a valid container") == true)
        #expect(message(PushSettings.topics("iCloud.a=com.a/b"))?.contains("bundle id") == true)
        #expect(message(PushSettings.topics("iCloud.a=com.a,iCloud.a=com.b"))?.contains("twice") == true)
        #expect(message(PushSettings.topics("iCloud.a=com.a,"))?.contains("is not CONTAINER=BUNDLE_ID") == true)
    }
}
