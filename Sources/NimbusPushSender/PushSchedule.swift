/// When the sender claims next (docs/push.md "The sender"): a pure state machine over times the
/// caller passes in (milliseconds since 1970), so its timing is tested without a clock or a database.
///
/// After a claim: a full claim means more is due, so claim again at once; otherwise sleep until
/// the earliest `due_at` (never longer than `maxSleepMillis`, in case a wake-up was missed, nor
/// shorter than `minSleepMillis`, so due rows another instance holds cannot make it spin). A
/// notification written anywhere ends the sleep early. Fewer than `minClaim` send slots free: sleep
/// until enough free (a claim is a transaction: claiming one push per freed slot would cost one per push).
package struct PushSchedule: Sendable, Equatable {
    package enum Action: Sendable, Equatable {
        /// Claim at once, at most `limit` pushes.
        case claim(limit: Int)
        /// Sleep this long unless woken (a notification was written, a send slot freed, stop).
        case sleep(milliseconds: Int64)
    }

    /// Pushes claimed and not yet recorded, at most (200: transfers beyond the peer's stream limit
    /// wait inside libcurl, whose bookkeeping for many waiting ones costs CPU per push; docs/push.md).
    package var maxInFlight: Int
    /// The fewest free slots worth a claim (a quarter of `maxInFlight`): with sends in flight the
    /// next claim waits until this many are free, so claims come in batches while the sends go on.
    package var minClaim: Int
    package var minSleepMillis: Int64
    package var maxSleepMillis: Int64
    /// A claim that failed (the database is down) waits this long before the next one.
    package var errorSleepMillis: Int64

    package init(maxInFlight: Int = 200, minSleepMillis: Int64 = 50, maxSleepMillis: Int64 = 30_000, errorSleepMillis: Int64 = 1_000) {
        self.maxInFlight = max(maxInFlight, 1)
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
