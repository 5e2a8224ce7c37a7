import NimbusCore
import NimbusSupport
import Testing

@Suite struct SubscriptionParseTests {
    private func parse(_ text: String) throws -> Subscription {
        try Subscription.parse(try JSONValue.parse(text), schema: [:], limits: Limits())
    }

    /// The SyncError that parsing the (well-formed JSON) text throws, if any.
    private func error(_ text: String) throws -> SyncError? {
        let json = try JSONValue.parse(text)
        do {
            _ = try Subscription.parse(json, schema: [:], limits: Limits())
            return nil
        } catch {
            return error
        }
    }

    @Test func refusesUPlus0000AnywhereBecauseTheSubscriptionIsStoredAsSent() throws {
        // PostgreSQL's jsonb cannot hold U+0000: before this check, such a subscription failed
        // the whole subscriptions/modify request at the database instead of being an item error.
        let bodies = [
            #"{"subscriptionID": "s", "subscriptionType": "query", "query": {"recordType": "T", "extra\u0000": 1}}"#,
            #"{"subscriptionID": "s", "subscriptionType": "query", "query": {"recordType": "T", "note": "a\u0000b"}}"#,
            #"{"subscriptionID": "s", "subscriptionType": "database", "notificationInfo": {"desiredKeys": ["a\u0000"]}}"#,
        ]
        for body in bodies {
            let refused = try #require(try error(body), "\(body)")
            #expect(refused.code == .badRequest)
            #expect(refused.reason.contains("U+0000"))
        }
    }

    @Test func acceptsTheSameSubscriptionWithoutIt() throws {
        let subscription = try parse(#"{"subscriptionID": "s", "subscriptionType": "query", "query": {"recordType": "T", "note": "ab"}}"#)
        #expect(subscription.id == "s")
        #expect(subscription.kind == .query)
    }
}
