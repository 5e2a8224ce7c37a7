import Foundation
import NimbusCore
import NimbusSupport
import NimbusPostgres

package enum SubscriptionOperation: Sendable {
    case save(Subscription, mustExist: Bool)
    case delete(String)
}

package enum SubscriptionResult: Sendable {
    case saved(Subscription)
    case deleted(String)
    case failed(String, ItemError)
}

/// Query and zone subscriptions, and the notifications a record write fires.
package struct SubscriptionStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded
}

extension SubscriptionStore {
    static func loadSubscriptions(_ connection: PGConnection, databaseID: Int64, schema: [String: RecordTypeSchema],
                                  limits: Limits = Limits()) throws -> [Subscription] {
        let definitions = try connection.query("""
            SELECT definition FROM subscriptions WHERE database_id = \(databaseID) ORDER BY subscription_id
            """) { try $0.jsonb(0) }
        return definitions.compactMap { text in
            guard let json = try? JSONValue.parse(text) else { return nil }
            return try? Subscription.parse(json, schema: schema, limits: limits)
        }
    }

    package func listSubscriptions(_ session: Session) async throws -> [Subscription] {
        try await pool.withConnection { connection in
            let schema = try SchemaStore.loadSchema(connection, container: session.container, environment: session.environment)
            return try Self.loadSubscriptions(connection, databaseID: session.databaseID, schema: schema)
        }
    }

    /// Creates (or replaces), updates and deletes subscriptions, each on its own. A subscription
    /// naming a zone needs the zone to exist; deleting the zone deletes its subscriptions.
    package func modifySubscriptions(_ session: Session, operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        var results: [SubscriptionResult] = []
        for operation in operations {
            let result = try await pool.withTransaction { connection -> SubscriptionResult in
                switch operation {
                case .delete(let id):
                    let removed = try connection.run("""
                        DELETE FROM subscriptions WHERE database_id = \(session.databaseID) AND subscription_id = \(id)
                        """)
                    return removed == 0 ? .failed(id, ItemError(.notFound, "Subscription \(id) does not exist.")) : .deleted(id)
                case .save(let subscription, let mustExist):
                    var zoneID: Int64?
                    if let zoneName = subscription.zoneName {
                        // Locked, so that a zone delete cannot commit between this check and the insert.
                        guard let zone = try ZoneStore.zone(connection, databaseID: session.databaseID, name: zoneName, lock: true), !zone.deleted else {
                            return .failed(subscription.id, ItemError(.zoneNotFound, "Zone \(zoneName) does not exist."))
                        }
                        zoneID = zone.id
                    }
                    let definition = PGData.jsonb(subscription.json.serializedString)
                    let firesOn = PGData.textArray(Subscription.Trigger.allCases.filter(subscription.firesOn.contains).map(\.rawValue))
                    let info = PGData.jsonb(JSONValue.object(subscription.notificationInfo).serializedString)
                    if mustExist {
                        let updated = try connection.run("""
                            UPDATE subscriptions SET subscription_type = \(subscription.kind.rawValue), zone_id = \(zoneID),
                                record_type = \(subscription.query?.recordType), fires_on = \(firesOn), fires_once = \(subscription.firesOnce),
                                notification_info = \(info), definition = \(definition)
                            WHERE database_id = \(session.databaseID) AND subscription_id = \(subscription.id)
                            """)
                        if updated == 0 { return .failed(subscription.id, ItemError(.notFound, "Subscription \(subscription.id) does not exist.")) }
                    } else {
                        try connection.run("""
                            INSERT INTO subscriptions (database_id, subscription_id, subscription_type, zone_id, record_type,
                                                       fires_on, fires_once, notification_info, definition)
                            VALUES (\(session.databaseID), \(subscription.id), \(subscription.kind.rawValue), \(zoneID),
                                    \(subscription.query?.recordType), \(firesOn), \(subscription.firesOnce), \(info), \(definition))
                            ON CONFLICT (database_id, subscription_id) DO UPDATE SET
                                subscription_type = excluded.subscription_type, zone_id = excluded.zone_id,
                                record_type = excluded.record_type, fires_on = excluded.fires_on, fires_once = excluded.fires_once,
                                notification_info = excluded.notification_info, definition = excluded.definition
                            """)
                    }
                    return .saved(subscription)
                }
            }
            results.append(result)
        }
        return results
    }

    /// Notifications for the writes of a plan, by the subscriptions they fire; firesOnce
    /// subscriptions fire once. Returns the rows and the subscriptions to delete.
    static func notifications(for plan: ModifyPlan, subscriptions: [Subscription], existing: [String: Record],
                              cascaded: [String: Record], zoneName: String) -> (rows: [(subscription: Subscription, payload: JSONValue, record: Record)], spent: [String]) {
        var rows: [(Subscription, JSONValue, Record)] = []
        var spent: [String] = []
        for write in plan.writes {
            let trigger: Subscription.Trigger
            let record: Record
            switch write {
            case .save(let saved, _, _, _):
                let before = existing[saved.recordName]
                trigger = (before == nil || before?.deleted == true) ? .create : .update
                record = saved
            case .delete(let name, _, _):
                // Deletes are matched against the record as it was.
                guard let before = existing[name] ?? cascaded[name] else { continue }
                trigger = .delete
                record = before
            }
            for subscription in subscriptions where !spent.contains(subscription.id) {
                guard subscription.fires(on: trigger, record: record, zoneName: zoneName) else { continue }
                let payload = subscription.notification(id: UUID().uuidString.lowercased(), trigger: trigger, record: record, zoneName: zoneName)
                rows.append((subscription, payload, record))
                if subscription.firesOnce { spent.append(subscription.id) }
            }
        }
        return (rows, spent)
    }
}
