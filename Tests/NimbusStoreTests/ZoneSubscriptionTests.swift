import NimbusTestSupport
import NimbusCore
import NimbusSupport
@testable import NimbusStore
import Testing

@Suite struct ZoneSubscriptionTests {
    /// Found by schemathesis: a zone subscription kept the deleted zone's id, and re-creating the
    /// zone (which gives it a new id) failed with a foreign-key violation, a 500.
    @Test func aDeletedZoneTakesItsSubscriptionsAndCanBeCreatedAgain() async throws {
        try await StoreFixture.with { fixture in
            let store = fixture.store
            let session = try await fixture.session()
            _ = try await store.zones.modifyZones(session, operations: [.create("z")])
            let subscription = try Subscription.parse(
                try JSONValue.parse(#"{"subscriptionID": "s", "subscriptionType": "zone", "zoneID": {"zoneName": "z"}}"#),
                schema: [:], limits: Limits())
            let saved = try await store.subscriptions.modifySubscriptions(session, operations: [.save(subscription, mustExist: false)])
            guard case .saved? = saved.first else { Issue.record("subscription not saved: \(saved)"); return }
            _ = try await store.zones.modifyZones(session, operations: [.delete("z")])
            #expect(try await store.subscriptions.listSubscriptions(session).isEmpty)
            let again = try await store.zones.modifyZones(session, operations: [.create("z")])
            guard case .zone(let zone)? = again.first else { Issue.record("re-create answered \(again)"); return }
            #expect(zone.name == "z" && !zone.deleted)
        }
    }

    /// Subscriptions left on a deleted zone by earlier versions do not block re-creating it.
    @Test func reCreatingAZoneClearsSubscriptionsLeftOnItsOldId() async throws {
        try await StoreFixture.with { fixture in
            let store = fixture.store
            let session = try await fixture.session()
            _ = try await store.zones.modifyZones(session, operations: [.create("z")])
            let subscription = try Subscription.parse(
                try JSONValue.parse(#"{"subscriptionID": "s", "subscriptionType": "zone", "zoneID": {"zoneName": "z"}}"#),
                schema: [:], limits: Limits())
            _ = try await store.subscriptions.modifySubscriptions(session, operations: [.save(subscription, mustExist: false)])
            // The old delete: the zone row marked deleted, its subscription left behind.
            let databaseID = session.databaseID
            _ = try await fixture.run { try $0.run("UPDATE zones SET deleted = true WHERE database_id = \(databaseID) AND zone_name = 'z'") }
            let again = try await store.zones.modifyZones(session, operations: [.create("z")])
            guard case .zone? = again.first else { Issue.record("re-create answered \(again)"); return }
            #expect(try await store.subscriptions.listSubscriptions(session).isEmpty)
        }
    }
}
