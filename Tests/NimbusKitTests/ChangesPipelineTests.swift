import Foundation
import Testing
@testable import NimbusKit

/// `ChangesPipeline`: a zone's pages fetched and decoded ahead of the engine, over an in-process
/// page source (`PagedChanges`): pages in the server's order, at most two ahead of the one the
/// engine holds, a wrong guess dropped and asked again, a page's error thrown only when that page
/// is due, and nothing left running once the pipeline is cancelled.
@Suite("The changes pipeline: order, bound, guesses, errors, cancellation")
struct ChangesPipelineTests {
    static let zone = ZoneID("paged")

    func pipeline(_ source: PagedChanges, guess: ChangesPipeline.Guess? = nil) -> ChangesPipeline {
        let decode: ChangesPipeline.Decode = { try ChangesPageDecoder.decode($0, zone: Self.zone) }
        if let guess { return ChangesPipeline(from: nil, fetch: { try await source.fetch($0) }, decode: decode, guess: guess) }
        return ChangesPipeline(from: nil, fetch: { try await source.fetch($0) }, decode: decode)
    }

    /// Every page, in order, until one without `moreComing`.
    func drain(_ pipeline: ChangesPipeline) async throws -> [ZoneChanges] {
        var pages: [ZoneChanges] = []
        while true {
            let page = try await pipeline.next()
            pages.append(page)
            if !page.moreComing { return pages }
        }
    }

    @Test func pagesComeInOrderEachAskedOnceAndAtMostTwoAheadOfTheOneHeld() async throws {
        let source = PagedChanges(pages: 8)
        let pipeline = pipeline(source)
        let first = try await pipeline.next()
        #expect(first.modified.map(\.recordName) == source.names(0))
        // Held by the engine: page 0. Page 1 is decoded ahead and page 2 fetched; page 3 waits
        // for page 1 to be taken, however long the engine takes.
        #expect(try await eventually(5) { source.snapshot.finished.count >= 3 })
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(source.snapshot.asked == ["", "t1", "t2"], "\(source.snapshot.asked)")
        let second = try await pipeline.next()
        #expect(second.modified.map(\.recordName) == source.names(1))
        #expect(try await eventually(5) { source.snapshot.asked.count == 4 })
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(source.snapshot.asked == ["", "t1", "t2", "t3"])
        let rest = try await drain(pipeline)
        #expect(rest.map { $0.modified.map(\.recordName) } == (2..<8).map { source.names($0) })
        #expect(rest.last?.syncToken == SyncToken("t8") && rest.last?.moreComing == false)
        #expect(source.snapshot.asked == ["", "t1", "t2", "t3", "t4", "t5", "t6", "t7"], "each page asked once, none past the last")
        #expect(pipeline.pagesUnderWay.isEmpty)
    }

    @Test func aGuessTheDecodedPageContradictsIsDroppedAndThePageAskedAgain() async throws {
        let source = PagedChanges(pages: 4)
        // The bytes of page 0 seem to name t99; its decoded token is t1. The request for t99 is
        // held so that it is still running when the decoded page contradicts it (for 300 ms: a
        // pipeline that kept the guess gets page 99, an empty last page, and the test ends).
        source.hold(99)
        Task {
            try await Task.sleep(nanoseconds: 300_000_000)
            source.release(99)
        }
        let lying: ChangesPipeline.Guess = { data in
            let real = ChangesContinuation.guess(data)
            return real?.token == "t1" ? .init(token: "t99", moreComing: true) : real
        }
        let pipeline = pipeline(source, guess: lying)
        let pages = try await drain(pipeline)
        #expect(pages.map { $0.modified.map(\.recordName) } == (0..<4).map { source.names($0) })
        #expect(source.snapshot.asked.contains("t99"), "the guess was asked for")
        #expect(source.snapshot.asked.filter { $0 != "t99" } == ["", "t1", "t2", "t3"])
        #expect(try await eventually(5) { source.snapshot.cancelled == ["t99"] }, "the wrong guess's request was cancelled: \(source.snapshot)")
        #expect(source.snapshot.running == 0)
    }

    @Test func aPagesErrorIsThrownWhenThatPageIsDueNotBefore() async throws {
        let source = PagedChanges(pages: 6)
        source.fail(2, with: NimbusError(.changeTokenExpired, reason: "expired"))
        let pipeline = pipeline(source)
        let first = try await pipeline.next()
        // Page 2's request has failed by now (pages 1 and 2 are fetched while page 0 is held)…
        #expect(try await eventually(5) { source.snapshot.finished.contains("t2") })
        // …and page 1 still comes first, whole.
        let second = try await pipeline.next()
        #expect(first.modified.map(\.recordName) == source.names(0) && second.modified.map(\.recordName) == source.names(1))
        await #expect { try await pipeline.next() } throws: { ($0 as? NimbusError)?.code == .changeTokenExpired }
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(!source.snapshot.asked.contains("t3"), "nothing asked after the failed page")
    }

    @Test func cancellingLeavesNoRequestRunningAndStartsNoneAfter() async throws {
        let source = PagedChanges(pages: 6)
        source.hold(1)
        source.hold(2)
        let pipeline = pipeline(source)
        _ = try await pipeline.next()
        #expect(try await eventually(5) { source.snapshot.running == 1 })
        pipeline.cancel()
        #expect(try await eventually(5) { source.snapshot.running == 0 }, "\(source.snapshot)")
        source.release(1)
        source.release(2)
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(source.snapshot.asked == ["", "t1"], "nothing asked after the cancel: \(source.snapshot.asked)")
        #expect(source.snapshot.cancelled == ["t1"])
        await #expect(throws: (any Error).self) { try await pipeline.next() }
    }

    @Test func cancellingTheTaskThatWaitsForAPageCancelsThePipeline() async throws {
        let source = PagedChanges(pages: 6)
        source.hold(1)
        let pipeline = pipeline(source)
        _ = try await pipeline.next()
        let waiter = Task { try await pipeline.next() }
        #expect(try await eventually(5) { source.snapshot.running == 1 })
        waiter.cancel()
        #expect(try await eventually(5) { source.snapshot.running == 0 }, "\(source.snapshot)")
        source.release(1)  // a request the cancel did not reach would now answer
        await #expect(throws: (any Error).self) { try await waiter.value }
        #expect(source.snapshot.cancelled == ["t1"] && source.snapshot.asked == ["", "t1"])
    }
}
