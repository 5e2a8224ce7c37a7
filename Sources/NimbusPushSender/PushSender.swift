import Foundation
import NimbusCore
import NimbusPush
import NimbusStore
import NimbusSupport

/// Sends the outbox's pushes (docs/push.md "The sender"): one per instance, started by `serve`
/// when push is on. It claims due pushes, sends each through its `PushTransport` with many in
/// flight at once, and records every outcome. It wakes when a notification is written (on any
/// instance, through the hub) and when the earliest push falls due; `stop` lets sends in flight
/// finish and claims nothing more (a push claimed but not answered is claimed again after its lease).
package final class PushSender: Sendable {
    private let outbox: PushOutboxStore
    private let counters: PushCounters
    private let transport: any PushTransport
    private let limits: Limits
    private let schedule: PushSchedule
    private let clock: any WallClock
    private let wake = WakeSignal()
    private let inFlight = Lock(0)
    private let stopping = Lock(false)
    private let logger = Logger(subsystem: "push")

    package init(store: Store, transport: any PushTransport, limits: Limits, schedule: PushSchedule = PushSchedule(),
                 clock: any WallClock = SystemClock()) {
        self.outbox = store.pushOutbox
        self.counters = store.pushCounters
        self.transport = transport
        self.limits = limits
        self.schedule = schedule
        self.clock = clock
        store.hub.observe { [wake] event in
            if event == nil || event?.kind == .notifications { wake.signal() }
        }
    }

    /// Asks `run` to return once the sends in flight are done.
    package func stop() {
        stopping.withLock { $0 = true }
        wake.signal()
    }

    private var isStopping: Bool { stopping.withLock { $0 } }

    /// The loop: claim, send, sleep until woken or due. Returns after `stop`, sends drained.
    package func run() async {
        await withDiscardingTaskGroup { group in
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
        }
        logger.info("push sender stopped")
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
        for push in claims {
            inFlight.withLock { $0 += 1 }
            group.addTask { [self] in
                await deliver(push)
                let wasFull = inFlight.withLock { count -> Bool in
                    count -= 1
                    return count + 1 >= schedule.maxInFlight
                }
                if wasFull { wake.signal() }
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

    /// Sends one push and records what came of it (a failed record leaves the push to its lease).
    private func deliver(_ push: ClaimedPush) async {
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
        do {
            let decision = try await outbox.recordOutcome(push, answer: answer)
            // The loop may be asleep until a due time read while this push's lease was its due time.
            if case .retry = decision { wake.signal() }
            logger.debug("push attempt recorded", ["apnsID": push.apnsID, "device": push.deviceTokenID, "attempt": push.attempt,
                                                   "status": answer.status.map { "\($0)" } ?? "none", "decision": "\(decision)"])
        } catch {
            logger.warning("could not record a push outcome; the push is claimed again after its lease",
                           ["apnsID": push.apnsID, "error": "\(error)"])
        }
    }
}
