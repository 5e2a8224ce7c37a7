import Dispatch
import Foundation
import Synchronization
import NimbusCore
import NimbusSupport

/// What changed, as announced by a committing writer (locally, and through NOTIFY to every
/// instance). A hint to re-read, never the truth: the change feeds are.
package struct ChangeEvent: Sendable, Hashable {
    package enum Kind: String, Sendable {
        /// Records of a zone changed; `sequence` is the zone's new change sequence.
        case records = "r"
        /// A zone was created or deleted.
        case zones = "z"
        /// Notifications were written; `sequence` is the database's newest notification.
        case notifications = "n"
    }

    package var databaseID: Int64
    package var kind: Kind
    package var zoneID: Int64
    package var sequence: Int64

    package init(databaseID: Int64, kind: Kind, zoneID: Int64 = 0, sequence: Int64 = 0) {
        self.databaseID = databaseID
        self.kind = kind
        self.zoneID = zoneID
        self.sequence = sequence
    }

    /// The NOTIFY payload: `<database> <kind> <zone> <sequence>`.
    package var payload: String { "\(databaseID) \(kind.rawValue) \(zoneID) \(sequence)" }

    package init?(payload: String) {
        let parts = payload.utf8.split(separator: UInt8(ascii: " ")).map { Substring($0) }   // bytes: not Characters
        guard parts.count == 4, let database = Int64(parts[0]), let kind = Kind(rawValue: String(parts[1])),
              let zone = Int64(parts[2]), let sequence = Int64(parts[3]) else { return nil }
        self.init(databaseID: database, kind: kind, zoneID: zone, sequence: sequence)
    }

    /// The channel every instance LISTENs on.
    package static let channel = "nimbus_changes"
}

/// A parked long-poll request as the hub sees it.
package protocol ParkedRequest: AnyObject, Sendable {
    /// A change in the request's database (nil: anything may have changed — re-read).
    func wake(_ event: ChangeEvent?)
    /// Time for a heartbeat byte.
    func heartbeat()
    /// The wait is over (deadline or shutdown): answer with no changes.
    func expire()
    /// The request's device token was revoked: answer at once, with no changes.
    func revoked()
}

/// Parked long-poll requests keyed by database (docs/architecture.md "Long-poll instead of push"). A parked
/// request costs an entry here and its socket — no thread, no database connection. One timer
/// scans for deadlines and heartbeats.
package final class ChangeHub: @unchecked Sendable {
    // @unchecked: `timer` is set once in init and only cancelled in deinit; every mutable field
    // lives in `state`, a Lock.
    package struct Capacity: Sendable {
        package var maxPerDevice: Int
        package var maxTotal: Int

        package init(maxPerDevice: Int = 8, maxTotal: Int = 10_000) {
            self.maxPerDevice = maxPerDevice
            self.maxTotal = maxTotal
        }
    }

    package struct Ticket: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        var databaseID: Int64
        var deviceKey: String
        var tokenID: String
        var request: any ParkedRequest
        var deadline: UInt64
        var heartbeatInterval: UInt64
        var nextHeartbeat: UInt64
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var byDatabase: [Int64: Set<UInt64>] = [:]
        var byDevice: [String: Int] = [:]
        var byToken: [String: Set<UInt64>] = [:]
        /// Tokens revoked lately, until when they are remembered: a request that authenticated
        /// just before its token was revoked is refused when it comes to park.
        var revoked: [String: UInt64] = [:]
        var nextID: UInt64 = 0
        var closed = false
    }

    private let state = Lock(State())
    /// Called on every `publish` (the event) and `wakeAll` (nil): the push sender wakes on them.
    private let observers = Lock<[@Sendable (ChangeEvent?) -> Void]>([])
    /// Counts wake-ups: a read that starts at generation g sees every commit woken for up to g.
    private let generation = Atomic<UInt64>(0)
    /// Waiters woken alike share their re-reads.
    package let sharedReads = SharedReads()
    private let capacity: Capacity
    /// How long a revoked token is remembered (longer than any request takes to reach `park`).
    static let revokedMemoryNanoseconds: UInt64 = 600_000_000_000
    /// The channel on which a revocation names its token id to every instance (LISTENed to on the
    /// connection that LISTENs to `ChangeEvent.channel`).
    package static let revocationChannel = "nimbus_revocations"
    private let timer: any DispatchSourceTimer
    private let logger = Logger(subsystem: "hub")

    package init(capacity: Capacity = Capacity(), tick: Double = 0.1) {
        self.capacity = capacity
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "nimbus.hub.timer"))
        timer.schedule(deadline: .now() + tick, repeating: tick, leeway: .milliseconds(20))
        timer.setEventHandler { [weak self] in self?.scan() }
        timer.resume()
    }

    deinit {
        timer.cancel()
    }

    /// Parked requests right now (metrics, tests).
    package var count: Int { state.withLock { $0.entries.count } }

    /// The devices (`userID/deviceID` keys given to `park`) with a request parked right now.
    package var waitingDeviceKeys: Set<String> { state.withLock { Set($0.byDevice.keys) } }

    /// The device tokens (`tokenID` given to `park`) with a request parked right now.
    package var parkedTokenIDs: Set<String> { state.withLock { Set($0.byToken.keys) } }

    /// Whether device token `tokenID` has a request parked on this instance for `databaseID` right
    /// now (push's long-poll first; at most `maxPerDevice` entries are looked at).
    package func isParked(tokenID: String, databaseID: Int64) -> Bool {
        state.withLock { state in
            state.byToken[tokenID]?.contains { state.entries[$0]?.databaseID == databaseID } ?? false
        }
    }

    /// Parks a request of device token `tokenID` until `wait` seconds pass, with a heartbeat every
    /// `heartbeat` seconds. Over the per-device or total cap: THROTTLED; a token this hub was told
    /// is revoked: AUTHENTICATION_FAILED.
    package func park(_ request: any ParkedRequest, databaseID: Int64, deviceKey: String, tokenID: String,
                      wait: Double, heartbeat: Double) throws(SyncError) -> Ticket {
        let now = monotonicNanoseconds()
        let result: Result<UInt64, SyncError> = state.withLock { state in
            if state.closed {
                return .failure(SyncError(.tryAgainLater, "The server is shutting down.", retryAfter: 1))
            }
            if state.revoked[tokenID] != nil {
                return .failure(SyncError(.authenticationFailed, "The bearer token is unknown or revoked."))
            }
            if state.entries.count >= capacity.maxTotal {
                return .failure(SyncError(.throttled, "The server holds its maximum of \(capacity.maxTotal) waiting requests (maxWaiters); retry shortly.", retryAfter: 5))
            }
            if state.byDevice[deviceKey, default: 0] >= capacity.maxPerDevice {
                return .failure(SyncError(.throttled, "This device already has \(capacity.maxPerDevice) waiting requests (maxWaitersPerDevice).", retryAfter: 5))
            }
            state.nextID += 1
            let interval = UInt64(max(heartbeat, 0.05) * 1e9)
            state.entries[state.nextID] = Entry(databaseID: databaseID, deviceKey: deviceKey, tokenID: tokenID, request: request,
                                                deadline: now + UInt64(max(wait, 0) * 1e9), heartbeatInterval: interval,
                                                nextHeartbeat: now + interval)
            state.byDatabase[databaseID, default: []].insert(state.nextID)
            state.byDevice[deviceKey, default: 0] += 1
            state.byToken[tokenID, default: []].insert(state.nextID)
            return .success(state.nextID)
        }
        return Ticket(id: try result.get())
    }

    /// Removes a parked request (answered, or its client went away). Idempotent.
    package func remove(_ ticket: Ticket) {
        state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: ticket.id) else { return }
            state.byDatabase[entry.databaseID]?.remove(ticket.id)
            if state.byDatabase[entry.databaseID]?.isEmpty == true { state.byDatabase[entry.databaseID] = nil }
            let remaining = (state.byDevice[entry.deviceKey] ?? 1) - 1
            state.byDevice[entry.deviceKey] = remaining > 0 ? remaining : nil
            state.byToken[entry.tokenID]?.remove(ticket.id)
            if state.byToken[entry.tokenID]?.isEmpty == true { state.byToken[entry.tokenID] = nil }
        }
    }

    /// Device token `tokenID` was revoked (here, or by another instance or the CLI: a notice on
    /// `revocationChannel`): its parked requests answer at once without data, and it parks no
    /// more. Idempotent.
    package func revoke(tokenID: String) {
        let now = monotonicNanoseconds()
        let requests = state.withLock { state in
            state.revoked[tokenID] = now + Self.revokedMemoryNanoseconds
            return (state.byToken[tokenID] ?? []).compactMap { state.entries[$0]?.request }
        }
        if !requests.isEmpty { logger.info("answering the parked requests of a revoked token", ["tokenID": tokenID, "count": requests.count]) }
        for request in requests { request.revoked() }
    }

    /// The wake-ups so far; a waiter notes it when woken, and a read started later sees its commit.
    package var wakeGeneration: UInt64 { generation.load(ordering: .sequentiallyConsistent) }

    /// Calls `observer` with every event published on this instance (every commit of every
    /// instance, through LISTEN) and with nil when everything must re-read. It must return fast.
    package func observe(_ observer: @escaping @Sendable (ChangeEvent?) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Wakes the parked requests of the event's database.
    package func publish(_ event: ChangeEvent) {
        generation.add(1, ordering: .sequentiallyConsistent)
        for observer in observers.withLock({ $0 }) { observer(event) }
        let requests = state.withLock { state in
            (state.byDatabase[event.databaseID] ?? []).compactMap { state.entries[$0]?.request }
        }
        for request in requests { request.wake(event) }
    }

    /// Wakes every parked request to re-read: after the LISTEN connection was re-established,
    /// changes may have been announced while nobody listened.
    package func wakeAll() {
        generation.add(1, ordering: .sequentiallyConsistent)
        let requests = state.withLock { state in state.entries.values.map(\.request) }
        logger.info("waking every parked request to re-read", ["count": requests.count])
        for observer in observers.withLock({ $0 }) { observer(nil) }
        for request in requests { request.wake(nil) }
    }

    /// True once `close` ran: the server is shutting down.
    package var isClosed: Bool { state.withLock { $0.closed } }

    /// Shutdown: answers every parked request now and refuses new ones.
    package func close() {
        let requests = state.withLock { state in
            state.closed = true
            return state.entries.values.map(\.request)
        }
        for request in requests { request.expire() }
    }

    private func scan() {
        let now = monotonicNanoseconds()
        var expired: [any ParkedRequest] = []
        var beats: [any ParkedRequest] = []
        state.withLock { state in
            if !state.revoked.isEmpty { state.revoked = state.revoked.filter { $0.value > now } }
            for (id, entry) in state.entries {
                if entry.deadline <= now {
                    expired.append(entry.request)
                } else if entry.nextHeartbeat <= now {
                    beats.append(entry.request)
                    state.entries[id]?.nextHeartbeat = now + entry.heartbeatInterval
                }
            }
        }
        for request in beats { request.heartbeat() }
        for request in expired { request.expire() }
    }
}
