import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// A waiting request (`wait` on a change feed, or a notification channel poll), parked in the
/// change hub: its headers go out at once (chunked), a space every heartbeat interval keeps
/// proxies from cutting it, a relevant change makes it re-read and answer, the deadline (or
/// shutdown) answers it empty, and a client that goes away frees its entry at once.
///
/// Its device token's revocation answers it at once, empty (the status went out with the
/// headers; the next request is 401), and before it delivers what it read it checks that the
/// token is still live, so a revocation notice that never arrived lets no data through.
final class LongPoll: ParkedRequest, Sendable {
    /// Reads again for a waiter woken at the given wake generation (`ChangeHub.wakeGeneration`):
    /// a read shared with others must have started at or after it.
    typealias Reread = @Sendable (_ wokenAt: UInt64) async throws -> [UInt8]?

    private enum Phase { case waiting, reading, finished }

    private struct State {
        var phase = Phase.waiting
        /// A wake-up arrived while a re-read was running: read again afterwards.
        var dirty = false
        /// The wake generation of the latest wake-up: the next read must start at or after it.
        var wokenAt: UInt64 = 0
        var ticket: ChangeHub.Ticket?
        /// The headers were handed to the writer: an answer may follow them.
        var started = false
        /// An answer that came (a revocation notice, say) after parking but before the headers
        /// went out: `start` sends it after them.
        var early: [UInt8]?
    }

    private let writer: HTTPResponseWriter
    private let hub: ChangeHub
    private let tokenID: String
    private let liveTokens: LiveTokens
    private let isRelevant: @Sendable (ChangeEvent) -> Bool
    private let reread: Reread
    private let emptyAnswer: [UInt8]
    private let onFinish: @Sendable () -> Void
    private let state = Lock(State())
    private let logger = Logger(subsystem: "longpoll")

    /// `tokenID` is the device token the request authenticated with.
    init(writer: HTTPResponseWriter, hub: ChangeHub, tokenID: String, liveTokens: LiveTokens, emptyAnswer: [UInt8],
         onFinish: @escaping @Sendable () -> Void, isRelevant: @escaping @Sendable (ChangeEvent) -> Bool, reread: @escaping Reread) {
        self.writer = writer
        self.hub = hub
        self.tokenID = tokenID
        self.liveTokens = liveTokens
        self.emptyAnswer = emptyAnswer
        self.onFinish = onFinish
        self.isRelevant = isRelevant
        self.reread = reread
    }

    /// Parks the request; throws (before anything was sent) THROTTLED over the caps, and
    /// AUTHENTICATION_FAILED when the hub heard that the token was revoked meanwhile.
    func start(databaseID: Int64, deviceKey: String, wait: Int, heartbeatSeconds: Int) throws {
        let ticket: ChangeHub.Ticket
        do {
            ticket = try hub.park(self, databaseID: databaseID, deviceKey: deviceKey, tokenID: tokenID, wait: Double(wait),
                                  heartbeat: Double(max(heartbeatSeconds, 1)))
        } catch {
            guard hub.isClosed else { throw error }
            // The server is shutting down: answered at once, as the parked requests were (empty,
            // the same token); the client asks again, through the proxy, another instance.
            state.withLock { $0.phase = .finished }
            writer.respond(HTTPResponse(status: .ok, headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"],
                                        body: emptyAnswer))
            onFinish()
            return
        }
        state.withLock { $0.ticket = ticket }
        writer.startStreaming(status: .ok, headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"])
        let early = state.withLock { state -> [UInt8]? in
            state.started = true
            return state.early
        }
        if let early {
            hub.remove(ticket)
            writer.finishStreaming(last: early)
            onFinish()
            return
        }
        writer.onCancel { [self] in cancel() }
        writer.probeWhenInputCloses([0x20])
        // A change may have committed between the first read and parking: look once more.
        wake(nil)
    }

    func wake(_ event: ChangeEvent?) {
        if let event, !isRelevant(event) { return }
        let generation = hub.wakeGeneration
        let shouldRead = state.withLock { state -> Bool in
            state.wokenAt = max(state.wokenAt, generation)
            switch state.phase {
            case .finished: return false
            case .reading:
                state.dirty = true
                return false
            case .waiting:
                state.phase = .reading
                return true
            }
        }
        guard shouldRead else { return }
        Task { await readUntilQuiet() }
    }

    private func readUntilQuiet() async {
        while true {
            do {
                if let answer = try await reread(state.withLock { $0.wokenAt }) {
                    // After the read: a token still live now was live when the read began.
                    finish(try await liveTokens.isLive(tokenID) ? answer : emptyAnswer)
                    return
                }
            } catch let error as SyncError where error.code != .tryAgainLater {
                // The zone went away or the token expired while waiting: answer empty; the next
                // request gets the error with its proper status.
                finish(emptyAnswer)
                return
            } catch {
                logger.warning("re-read of a waiting request failed; still waiting", ["error": "\(error)"])
            }
            let again = state.withLock { state -> Bool in
                guard state.phase != .finished else { return false }
                if state.dirty {
                    state.dirty = false
                    return true
                }
                state.phase = .waiting
                return false
            }
            if !again { return }
        }
    }

    func heartbeat() {
        let active = state.withLock { $0.phase != .finished }
        if active { writer.writeChunk([0x20]) }
    }

    func expire() {
        finish(emptyAnswer)
    }

    func revoked() {
        finish(emptyAnswer)
    }

    private func cancel() {
        let ticket = state.withLock { state -> ChangeHub.Ticket? in
            guard state.phase != .finished else { return nil }
            state.phase = .finished
            return state.ticket
        }
        if let ticket { hub.remove(ticket) }
    }

    private func finish(_ answer: [UInt8]) {
        let ticket = state.withLock { state -> ChangeHub.Ticket?? in
            guard state.phase != .finished else { return nil }
            state.phase = .finished
            guard state.started else {
                // Writer calls keep their order only from one thread: `start` sends it.
                state.early = answer
                return nil
            }
            return .some(state.ticket)
        }
        guard let ticket else { return }
        if let ticket { hub.remove(ticket) }
        writer.finishStreaming(last: answer)
        onFinish()
    }
}
