import NimbusCore
import Testing

/// At most N background pushes to a device in any hour; pushes due together merge per zone.
@Suite struct BackgroundPushWindowTests {
    typealias Window = BackgroundPushWindow
    let hour = Window.lengthMillis

    func candidate(_ id: Int64, _ zone: String, _ sequence: Int64) -> Window.Candidate {
        Window.Candidate(id: id, zone: zone, sequence: sequence)
    }

    @Test func pushesDueTogetherMergeIntoTheLatestOfTheirZone() {
        let plan = Window.plan(sentAt: [], candidates: [candidate(1, "a", 10), candidate(2, "b", 11), candidate(3, "a", 12), candidate(4, "a", 9)],
                               maxPerHour: 3, now: 0)
        #expect(plan.send == [2, 3])
        #expect(plan.merged == [1, 4])
        #expect(plan.hold.isEmpty)
        #expect(plan.sentAt == [0, 0])
    }

    @Test func aFullWindowHoldsUntilItsOldestSendIsAnHourOld() {
        let now: Int64 = 10 * hour
        let sent = [now - hour + 5, now - 100, now - hour / 2]
        let plan = Window.plan(sentAt: sent, candidates: [candidate(7, "a", 1)], maxPerHour: 3, now: now)
        #expect(plan.send.isEmpty)
        #expect(plan.hold == [7])
        #expect(plan.opensAt == now + 5)
        // At exactly that time the oldest has left the window: one goes.
        let later = Window.plan(sentAt: plan.sentAt, candidates: [candidate(7, "a", 1)], maxPerHour: 3, now: now + 5)
        #expect(later.send == [7])
        #expect(later.sentAt == [now - hour / 2, now - 100, now + 5])
    }

    @Test func roomForSomeSendsTheOldestNotificationsAndHoldsTheRest() {
        let now: Int64 = 5 * hour
        let plan = Window.plan(sentAt: [now - 10, now - 2 * hour], candidates: [candidate(3, "c", 30), candidate(1, "a", 10), candidate(2, "b", 20)],
                               maxPerHour: 3, now: now)
        #expect(plan.send == [1, 2])
        #expect(plan.hold == [3])
        #expect(plan.opensAt == now - 10 + hour)
        #expect(plan.sentAt == [now - 10, now, now])
    }

    @Test func noLimitSendsOnePerZone() {
        let plan = Window.plan(sentAt: Array(repeating: 0, count: 50), candidates: [candidate(1, "a", 1), candidate(2, "a", 2)], maxPerHour: 0, now: 1)
        #expect(plan.send == [2])
        #expect(plan.merged == [1])
        #expect(plan.hold.isEmpty)
    }
}
