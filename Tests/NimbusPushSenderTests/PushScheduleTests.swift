import Testing
import NimbusPushSender

@Suite struct PushScheduleTests {
    let schedule = PushSchedule(maxInFlight: 10, minSleepMillis: 50, maxSleepMillis: 30_000, errorSleepMillis: 1_000)

    @Test func aFullClaimClaimsAgainAtOnce() {
        #expect(schedule.afterClaim(claimed: 4, limit: 4, earliestDue: nil, now: 0) == .claim(limit: 4))
    }

    @Test func aShortClaimSleepsUntilTheEarliestDueTime() {
        #expect(schedule.afterClaim(claimed: 1, limit: 10, earliestDue: 11_500, now: 10_000) == .sleep(milliseconds: 1_500))
    }

    @Test func dueRowsThatCouldNotBeClaimedNeverMakeItSpin() {
        // Due already (held by another instance's claim, SKIP LOCKED): the floor, not zero.
        #expect(schedule.afterClaim(claimed: 0, limit: 10, earliestDue: 9_000, now: 10_000) == .sleep(milliseconds: 50))
    }

    @Test func anEmptyOutboxSleepsAtMostTheCeiling() {
        #expect(schedule.afterClaim(claimed: 0, limit: 10, earliestDue: nil, now: 0) == .sleep(milliseconds: 30_000))
        #expect(schedule.afterClaim(claimed: 0, limit: 10, earliestDue: 10_000_000, now: 0) == .sleep(milliseconds: 30_000))
    }

    @Test func sendsInFlightBoundTheClaim() {
        #expect(schedule.next(inFlight: 0) == .claim(limit: 10))
        #expect(schedule.next(inFlight: 7) == .claim(limit: 3))
        #expect(schedule.next(inFlight: 10) == .sleep(milliseconds: 30_000))
    }

    @Test func claimsWaitForAQuarterOfTheSlotsToFree() {
        let schedule = PushSchedule(maxInFlight: 500)
        #expect(schedule.minClaim == 125)
        #expect(schedule.next(inFlight: 375) == .claim(limit: 125))
        // One freed slot is not worth a claim (a transaction) while 376 sends are on their way.
        #expect(schedule.next(inFlight: 376) == .sleep(milliseconds: 30_000))
        #expect(schedule.next(inFlight: 499) == .sleep(milliseconds: 30_000))
        #expect(PushSchedule(maxInFlight: 2).next(inFlight: 1) == .claim(limit: 1))
    }

    @Test func sendSlotsAreFewerThanClaimedPlacesAndNeverMore() {
        let defaults = PushSchedule()
        #expect(defaults.maxSending < defaults.maxInFlight)
        // A claim takes at least as many pushes as there are send slots: while it runs, the slots
        // are refilled from pushes claimed before.
        #expect(defaults.minClaim >= defaults.maxSending)
        #expect(PushSchedule(maxSending: 50, maxInFlight: 10).maxSending == 10)
        #expect(PushSchedule(maxSending: 0, maxInFlight: 10).maxSending == 1)
    }

    @Test func aFailedClaimWaitsBeforeTheNext() {
        #expect(schedule.afterFailedClaim() == .sleep(milliseconds: 1_000))
    }
}
