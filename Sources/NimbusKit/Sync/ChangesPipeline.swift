import Foundation

/// The `records/changes` pages of one zone, fetched and decoded ahead of the engine's apply, handed
/// out in order (`next()`). Page N+1 is asked for from the task that received page N, as soon as
/// N's bytes name its token (`ChangesContinuation`: no hop through the engine's actor), and is
/// decoded (its fields opened) in that task while the engine applies and saves page N.
///
/// Bounded: while the engine holds page N, page N+1 at most is fetched or decoded and page N+2 at
/// most is being fetched; a later page's request waits until the engine takes the page before it.
/// A guess the decoded page contradicts is dropped (its request cancelled) and the page asked for
/// again with the decoded token. A page's error (of its request or its decoding) is thrown by the
/// `next()` that would have returned that page, never earlier. `cancel()` (when the fetch ends,
/// throws or is cancelled) cancels every request and decoding under way, and none starts after it.
final class ChangesPipeline: Sendable {
    typealias Fetch = @Sendable (SyncToken?) async throws -> Data
    typealias Decode = @Sendable (Data) async throws -> ZoneChanges
    typealias Guess = @Sendable (Data) -> ChangesContinuation.Guess?

    /// A page the pipeline knows of: the token it is asked with (a guess until the page before it
    /// is decoded) and, once the window let it start, its task (request, then decoding).
    private struct Slot {
        var token: SyncToken?
        var task: Task<ZoneChanges, any Error>?
        /// Which start this is (a page dropped and asked again gets another): a dropped page's task
        /// still running proposes nothing.
        var run = 0
    }

    private struct State {
        /// Pages known and not yet taken, by their index from 0.
        var slots: [Int: Slot] = [:]
        /// Pages the engine took; the next `next()` returns page `taken`.
        var taken = 0
        var cancelled = false
        var runs = 0
    }

    private let state = Locked(State())
    private let fetch: Fetch
    private let decode: Decode
    private let guess: Guess

    /// Starts asking for the page after `token` (nil: the zone's first).
    init(from token: SyncToken?, fetch: @escaping Fetch, decode: @escaping Decode,
         guess: @escaping Guess = { ChangesContinuation.guess($0) }) {
        self.fetch = fetch
        self.decode = decode
        self.guess = guess
        state.withLock { state in
            state.slots[0] = Slot(token: token)
            start(0, &state)
        }
    }

    /// The next page in the server's order, or the error its request or decoding met. Call it again
    /// only after a page with `moreComing`. Cancelling the calling task cancels the pipeline.
    func next() async throws -> ZoneChanges {
        let (index, stage) = state.withLock { state in (state.taken, state.slots[state.taken]?.task) }
        guard let stage else {
            throw NimbusError(.invalidArguments, reason: "The changes pipeline has no page \(index) under way (cancelled, or asked past the last page).")
        }
        let page = try await withTaskCancellationHandler { try await stage.value } onCancel: { cancel() }
        state.withLock { state in
            state.slots[index] = nil
            state.taken = index + 1
            start(index + 2, &state)  // if it waited for this page to be taken (the window moved on by one)
        }
        return page
    }

    /// Cancels every page under way; nothing starts after this.
    func cancel() {
        let stages = state.withLock { state in
            state.cancelled = true
            defer { state.slots = [:] }
            return state.slots.values.compactMap(\.task)
        }
        for stage in stages { stage.cancel() }
    }

    /// Pages started and not yet taken (tests).
    var pagesUnderWay: [Int] { state.withLock { $0.slots.filter { $0.value.task != nil }.keys.sorted() } }

    // MARK: - Stages

    /// Starts page `index` with its recorded token when the window allows (the engine took the page
    /// two before it); otherwise it starts when that page is taken (`next`).
    private func start(_ index: Int, _ state: inout State) {
        guard !state.cancelled, index <= state.taken + 1, let slot = state.slots[index], slot.task == nil else { return }
        let token = slot.token
        state.runs += 1
        let run = state.runs
        state.slots[index]?.run = run
        state.slots[index]?.task = Task { try await self.run(index, token, run) }
    }

    /// One page: its request, the next page asked for from its bytes, then its decoding.
    private func run(_ index: Int, _ token: SyncToken?, _ run: Int) async throws -> ZoneChanges {
        let data = try await fetch(token)
        if let guessed = guess(data), guessed.moreComing { propose(index + 1, SyncToken(guessed.token), from: run) }
        let page: ZoneChanges
        do {
            page = try await decode(data)
        } catch {
            propose(index + 1, nil, from: run)
            throw error
        }
        propose(index + 1, page.moreComing ? page.syncToken : nil, from: run)
        return page
    }

    /// Sets page `index`'s token (nil: there is no such page), as the page before it (start `run`,
    /// still current) says: a page already asked for with another token is cancelled and asked for again.
    private func propose(_ index: Int, _ token: SyncToken?, from run: Int) {
        let dropped = state.withLock { state -> Task<ZoneChanges, any Error>? in
            guard !state.cancelled, state.slots[index - 1]?.run == run else { return nil }
            let known = state.slots[index]
            if known == nil && token == nil { return nil }
            if let known, let token, known.token == token { return nil }  // the guess holds
            state.slots[index] = token.map { Slot(token: $0) }
            start(index, &state)
            return known?.task
        }
        dropped?.cancel()
    }
}
