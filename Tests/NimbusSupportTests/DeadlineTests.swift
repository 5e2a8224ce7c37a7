import NimbusSupport
import Testing

@Suite struct DeadlineTests {
    @Test func aValueInTimeIsReturned() async throws {
        let value = try await valueWithin(seconds: 5) { 42 }
        #expect(value == 42)
    }

    @Test func anErrorInTimeIsThrown() async {
        struct Failure: Error {}
        await #expect(throws: Failure.self) { try await valueWithin(seconds: 5) { () async throws -> Int in throw Failure() } }
    }

    /// A slow operation (a libpq connect to a server that does not answer) gives nil at the
    /// deadline, not when it ends.
    @Test func aSlowOperationGivesNilAtTheDeadline() async throws {
        let start = ContinuousClock.now
        let value = try await valueWithin(seconds: 0.2) { () async throws -> Int in
            try await Task.sleep(for: .seconds(3))
            return 1
        }
        #expect(value == nil)
        #expect(ContinuousClock.now - start < .seconds(2))
    }
}
