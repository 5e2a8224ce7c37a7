import Foundation

extension CKDatabase {
    public func save(_ subscription: CKSubscription) async throws -> CKSubscription {
        let database = try nimbusDatabase()
        do { return CKSubscription.from(try await database.save(try subscription.nimbusSubscription())) } catch { throw CKError(error) }
    }

    public func save(_ subscription: CKSubscription, completionHandler: @escaping (CKSubscription?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.save(subscription) }, completionHandler)
    }

    public func allSubscriptions() async throws -> [CKSubscription] {
        let database = try nimbusDatabase()
        do { return try await database.subscriptions().map(CKSubscription.from) } catch { throw CKError(error) }
    }

    public func fetchAllSubscriptions(completionHandler: @escaping ([CKSubscription]?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.allSubscriptions() }, completionHandler)
    }

    @discardableResult
    public func deleteSubscription(withID subscriptionID: String) async throws -> String {
        let database = try nimbusDatabase()
        do { try await database.deleteSubscription(subscriptionID) } catch { throw CKError(error) }
        return subscriptionID
    }

    public func delete(withSubscriptionID subscriptionID: String, completionHandler: @escaping (String?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.deleteSubscription(withID: subscriptionID) }, completionHandler)
    }

    /// While the app runs: the notifications of this database's subscriptions as an `AsyncSequence`
    /// (long-polled; resumes from a saved cursor, so nothing sent while away is lost). A suspended
    /// app gets them as APNs pushes when the server has push (`CKNotification(fromRemoteNotificationDictionary:)`).
    public func notifications(resumingFrom cursor: NotificationCursor? = nil) async throws -> NotificationChannel {
        let database = try nimbusDatabase()
        do { return try await database.notificationChannel(resumingFrom: cursor) } catch { throw CKError(error) }
    }
}
