import NimbusStore
import Testing

/// The counters `/metrics` shows: bounded labels, nothing counted for zero.
@Suite struct PushCountersTests {
    @Test func failuresAreCountedUnderADocumentedReasonNoAnswerOrOther() {
        let counters = PushCounters()
        counters.failed(reason: "Unregistered")
        counters.failed(reason: "Unregistered")
        counters.failed(reason: nil)
        counters.failed(reason: "SomethingAppleNeverSaid")
        counters.failed(reason: "")
        counters.failed(reason: "unregistered\"}\n")
        #expect(counters.snapshot.failedByReason == ["Unregistered": 2, "no-answer": 1, "other": 3])
        #expect(counters.snapshot.failed == 6)
    }

    @Test func queuedSentAndSkippedAddUp() {
        let counters = PushCounters()
        counters.queued(3)
        counters.queued(0)
        counters.sent()
        counters.skippedByLongPoll()
        counters.skippedByLongPoll(2)
        counters.skippedByLongPoll(0)
        let snapshot = counters.snapshot
        #expect(snapshot.queued == 3 && snapshot.sent == 1 && snapshot.skippedByLongPoll == 3 && snapshot.failedByReason.isEmpty)
    }

    @Test func everyReasonAPNsDocumentsKeepsItsName() {
        for reason in ["BadDeviceToken", "DeviceTokenNotForTopic", "ExpiredProviderToken", "TooManyRequests", "InternalServerError",
                       "ServiceUnavailable", "PayloadTooLarge", "TopicDisallowed"] {
            #expect(PushCounters.label(reason: reason) == reason)
        }
    }
}
