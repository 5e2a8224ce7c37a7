/// When the sender claims next (docs/push.md "The sender"): a pure state machine over times the
/// caller passes in (milliseconds since 1970), so its timing is tested without a clock or a database.
///
/// After a claim: a full claim means more is due, so claim again at once; otherwise sleep until
/// the earliest `due_at` (never longer than `maxSleepMillis`, in case a wake-up was missed, nor
/// shorter than `minSleepMillis`, so due rows another instance holds cannot make it spin). A
/// notification written anywhere ends the sleep early. Fewer than `minClaim` of the `maxInFlight`
/// places free: sleep until enough free (a claim is a transaction: claiming one push per recorded
/// outcome would cost one per push).
package struct PushSchedule: Sendable, Equatable {
    package enum Action: Sendable, Equatable {
        /// Claim at once, at most `limit` pushes.
        case claim(limit: Int)
        /// Sleep this long unless woken (a notification was written, a send slot freed, stop).
        case sleep(milliseconds: Int64)
    }

    /// Pushes on their way to APNs at once, at most (200: twice the streams a peer usually allows on
    /// one connection, so a stream that ends is followed at once by one libcurl holds ready; more than
    /// that waiting inside libcurl costs CPU per push, docs/push.md). The rest of the claimed pushes
    /// wait for a send slot in the sender (`SendPermits`), where waiting costs nothing.
    package var maxSending: Int
    /// Pushes claimed and not yet recorded, at most (800: the sends, the pushes claimed ahead of their
    /// send slot, the answers waiting for the recorder). Claiming ahead keeps every send slot busy while
    /// the next claim and the recorder's transaction wait for PostgreSQL: a slot frees at the answer.
    package var maxInFlight: Int
    /// The fewest free slots worth a claim (a quarter of `maxInFlight`): with pushes in flight the
    /// next claim waits until this many are free, so claims come in batches while the sends go on.
    package var minClaim: Int
    package var minSleepMillis: Int64
    package var maxSleepMillis: Int64
    /// A claim that failed (the database is down) waits this long before the next one.
    package var errorSleepMillis: Int64

    package init(maxSending: Int = 200, maxInFlight: Int = 800, minSleepMillis: Int64 = 50, maxSleepMillis: Int64 = 30_000,
                 errorSleepMillis: Int64 = 1_000) {
        self.maxInFlight = max(maxInFlight, 1)
        self.maxSending = min(max(maxSending, 1), self.maxInFlight)
        self.minClaim = max(self.maxInFlight / 4, 1)
        self.minSleepMillis = minSleepMillis
        self.maxSleepMillis = maxSleepMillis
        self.errorSleepMillis = errorSleepMillis
    }

    /// What to do with `inFlight` pushes claimed and not yet recorded: claim for the free slots when
    /// at least `minClaim` are free (or nothing is in flight), or wait until enough free.
    package func next(inFlight: Int) -> Action {
        let room = maxInFlight - inFlight
        return room > 0 && (room >= minClaim || inFlight <= 0) ? .claim(limit: room) : .sleep(milliseconds: maxSleepMillis)
    }

    /// What to do after a claim of at most `limit` returned `claimed` pushes, when the earliest
    /// remaining `due_at` is `earliestDue` (nil: the outbox is empty) at `now`.
    package func afterClaim(claimed: Int, limit: Int, earliestDue: Int64?, now: Int64) -> Action {
        if claimed >= limit { return .claim(limit: limit) }
        guard let earliestDue else { return .sleep(milliseconds: maxSleepMillis) }
        return .sleep(milliseconds: min(max(earliestDue - now, minSleepMillis), maxSleepMillis))
    }

    /// What to do after a claim threw.
    package func afterFailedClaim() -> Action {
        .sleep(milliseconds: errorSleepMillis)
    }
}
