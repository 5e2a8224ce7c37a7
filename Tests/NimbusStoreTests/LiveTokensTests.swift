import NimbusStore
import NimbusTestSupport
import Testing

/// The check a parked long-poll makes before delivering: right answers, batched.
@Suite struct LiveTokensTests {
    @Test func concurrentChecksAreAnsweredRightByFewStatements() async throws {
        try await StoreFixture.with { fixture in
            let accounts = fixture.store.accounts
            _ = try await accounts.addUser(name: "alice")
            let live = try await accounts.issueToken(user: "alice", device: "mac").tokenID
            let revoked = try await accounts.issueToken(user: "alice", device: "phone").tokenID
            try await accounts.revokeToken(tokenID: revoked)
            let checker = fixture.store.liveTokens
            let questions = (0..<300).map { [live, revoked, "tok_unknown"][$0 % 3] }
            let answers = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                for tokenID in questions { group.addTask { (tokenID, try await checker.isLive(tokenID)) } }
                return try await group.reduce(into: [(String, Bool)]()) { $0.append($1) }
            }
            #expect(answers.count == 300)
            #expect(answers.allSatisfy { $0.1 == ($0.0 == live) }, "only the live token is live")
            #expect(checker.statements < 300 / 3, "\(checker.statements) statements for 300 questions")
        }
    }
}
