import Foundation
import NimbusCore
import NimbusPush
import NimbusStore
import NimbusSupport

/// Sends the outbox's pushes (docs/push.md "The sender"): one per instance, started by `serve`
/// when push is on. It claims due pushes in batches, ahead of their sends, sends each through its
/// `PushTransport` with `maxSending` on their way at once, and records the outcomes: a recorder task
/// writes the answers that arrived while it wrote the previous ones, in one transaction
/// (`recordOutcomes`). A push holds a send slot (`SendPermits`) from its send until its answer, and a
/// place among the `maxInFlight` from its claim until its outcome is recorded, so neither the next
/// claim nor the recorder's transaction leaves the send slots idle. The sender wakes when a
/// notification is written (on any instance, through the hub), when the earliest push falls due and
/// when recorded outcomes free places; `stop` lets sends on their way finish and be recorded, hands
/// the claimed pushes still waiting for a slot back to the outbox, and claims nothing more (a push
/// claimed but not recorded, after a crash, is claimed again after its lease).
package final class PushSender: Sendable {
    private let outbox: PushOutboxStore
    private let counters: PushCounters
    private let transport: any PushTransport
    private let limits: Limits
    private let schedule: PushSchedule
    private let clock: any WallClock
    private let wake = WakeSignal()
    /// Pushes claimed and not yet recorded.
    private let inFlight = Lock(0)
    private let stopping = Lock(false)
    private let recorder = OutcomeRecorder()
    private let permits: SendPermits
    /// Claimed pushes that `stop` kept from their send: handed back to the outbox when `run` ends.
    private let unsent = Lock<[ClaimedPush]>([])
    private let logger = Logger(subsystem: "push")

    package init(store: Store, transport: any PushTransport, limits: Limits, schedule: PushSchedule = PushSchedule(),
                 clock: any WallClock = SystemClock()) {
        self.outbox = store.pushOutbox
        self.counters = store.pushCounters
        self.transport = transport
        self.limits = limits
        self.schedule = schedule
        self.clock = clock
        self.permits = SendPermits(count: schedule.maxSending)
        store.hub.observe { [wake] event in
            if event == nil || event?.kind == .notifications { wake.signal() }
        }
    }

    /// Asks `run` to return once the sends in flight are done and recorded.
    package func stop() {
        stopping.withLock { $0 = true }
        permits.close()
        wake.signal()
    }

    private var isStopping: Bool { stopping.withLock { $0 } }

    /// The loop: claim, send, sleep until woken or due; beside it the recorder. Returns after
    /// `stop`, sends drained and recorded.
    package func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { [self] in await recordLoop() }
            var action = PushSchedule.Action.claim(limit: schedule.maxInFlight)
            while !isStopping {
                switch action {
                case .sleep(let milliseconds):
                    await wake.wait(milliseconds: milliseconds)
                    action = schedule.next(inFlight: inFlight.withLock { $0 })
                case .claim(let limit):
                    action = await claim(limit: limit, group: &group)
                }
            }
            recorder.claimsEnded()
        }
        let unsent = unsent.withLock { $0 }
        do {
            try await outbox.releaseClaims(unsent)
        } catch {
            logger.warning("could not hand unsent pushes back; they are claimed again after their lease",
                           ["count": unsent.count, "error": "\(error)"])
        }
        logger.info("push sender stopped", ["unsent": unsent.count])
    }

    /// Claims at most `limit` due pushes, starts a send for each, and says what to do next.
    private func claim(limit: Int, group: inout DiscardingTaskGroup) async -> PushSchedule.Action {
        let claims: [ClaimedPush]
        do {
            claims = try await outbox.claimDuePushes(limit: limit, limits: limits)
        } catch {
            logger.warning("could not claim due pushes; trying again", ["error": "\(error)"])
            return schedule.afterFailedClaim()
        }
        inFlight.withLock { $0 += claims.count }
        for push in claims {
            group.addTask { [self] in
                guard await permits.acquire() else { return keep(push) }
                let answer = await send(push)
                permits.release()
                recorder.add(push, answer)
            }
        }
        if claims.count >= limit { return schedule.next(inFlight: inFlight.withLock { $0 }) }
        do {
            let earliest = try await outbox.earliestDueAt()
            return schedule.afterClaim(claimed: claims.count, limit: limit, earliestDue: earliest, now: clock.nowMilliseconds())
        } catch {
            logger.warning("could not read when the next push is due", ["error": "\(error)"])
            return schedule.afterFailedClaim()
        }
    }

    /// Sends one push: APNs' answer, or what the outbox records when none came.
    private func send(_ push: ClaimedPush) async -> PushAnswer {
        let answer: PushAnswer
        if let request = push.apnsRequest(maxPayloadBytes: limits.maxPushPayloadBytes) {
            do {
                answer = PushAnswer(try await transport.send(request))
            } catch {
                logger.info("push not answered", ["apnsID": push.apnsID, "device": push.deviceTokenID, "error": "\(error)"])
                answer = PushAnswer(error)
            }
        } else {
            answer = PushAnswer(status: 400, reason: "NotSent")
        }
        if answer.status == 200 { counters.sent() } else { counters.failed(reason: answer.status == nil ? nil : answer.reason ?? "") }
        return answer
    }

    /// A claimed push `stop` kept from its send: no outcome; `run` hands it back to the outbox.
    private func keep(_ push: ClaimedPush) {
        unsent.withLock { $0.append(push) }
        inFlight.withLock { $0 -= 1 }
        recorder.nudge()
    }

    /// Records the answers in batches until the claims ended and every claimed push is recorded.
    /// A failed record leaves its pushes to their lease.
    private func recordLoop() async {
        while let batch = await recorder.next(inFlight: { inFlight.withLock { $0 } }) {
            do {
                let decisions = try await outbox.recordOutcomes(batch)
                // The loop may be asleep until a due time read while these pushes' leases were their due times.
                if decisions.contains(where: { if case .retry = $0 { true } else { false } }) { wake.signal() }
                logger.debug("push attempts recorded", ["count": batch.count])
            } catch {
                logger.warning("could not record push outcomes; the pushes are claimed again after their lease",
                               ["count": batch.count, "error": "\(error)"])
            }
            let (before, after) = inFlight.withLock { count -> (Int, Int) in
                count -= batch.count
                return (count + batch.count, count)
            }
            // The claim loop waits for free slots only when the schedule said so.
            if case .sleep = schedule.next(inFlight: before), case .claim = schedule.next(inFlight: after) { wake.signal() }
        }
    }
}
