import Foundation

/// A notification of a subscription, delivered through the notification channel (long-poll
/// instead of push).
public struct NimbusNotification: Sendable, Hashable {
    public enum Reason: String, Sendable, Hashable { case recordCreated, recordUpdated, recordDeleted }

    public struct Alert: Sendable, Hashable {
        public var title: String?
        public var body: String?
        public var localizationKey: String?
        public var soundName: String?
    }

    public var notificationID: String
    public var subscriptionID: String
    public var kind: Subscription.Kind
    public var reason: Reason
    public var recordID: RecordID?
    public var recordType: String?
    public var alert: Alert?
    public var contentAvailable: Bool
    /// The subscription's `desiredKeys` of the record, encrypted ones opened with the device's
    /// keys (a sealed alert). When they do not open they stay sealed (no plaintext) and
    /// `unreadable` says why.
    public var fields: [String: RecordValue]
    /// Why the encrypted fields are not opened: `encryptionKeyMissing` (no key on this device) or
    /// `decryptionFailed` (naming the field); nil when there were none or they opened.
    public var unreadable: NimbusError? = nil
    /// Where to resume to receive the notifications after this one.
    public var cursor: NotificationCursor

    static func fromWire(_ object: JSONObject, cursor: NotificationCursor) throws -> NimbusNotification {
        guard let id = JSON.string(object["notificationID"]), let subscription = JSON.string(object["subscriptionID"]) else {
            throw JSON.bad("A notification has no notificationID or subscriptionID")
        }
        let zone = JSON.string(JSON.object(object["zoneID"])?["zoneName"]).map(ZoneID.init) ?? .default
        var fields: [String: RecordValue] = [:]
        for (key, field) in JSON.object(object["fields"]) ?? [:] {
            if let value = try RecordValue.fromWire(field, zoneID: zone) { fields[key] = value }
        }
        let alert = JSON.object(object["alert"]).map { a in
            Alert(title: JSON.string(a["title"]), body: JSON.string(a["body"]), localizationKey: JSON.string(a["localizationKey"]),
                  soundName: JSON.string(a["soundName"]))
        }
        return NimbusNotification(
            notificationID: id, subscriptionID: subscription,
            kind: Subscription.Kind(rawValue: JSON.string(object["notificationType"]) ?? "") ?? .query,
            reason: Reason(rawValue: JSON.string(object["reason"]) ?? "") ?? .recordUpdated,
            recordID: JSON.string(object["recordName"]).map { RecordID(recordName: $0, zoneID: zone) },
            recordType: JSON.string(object["recordType"]), alert: alert,
            contentAvailable: JSON.bool(object["contentAvailable"]) ?? false, fields: fields, cursor: cursor)
    }
}

/// A position in a notification channel: keep it to resume where the app left off.
public struct NotificationCursor: Sendable, Hashable, Codable {
    public var channelURL: URL
    public var value: String
}

/// The notification channel of a database as an `AsyncSequence`: it long-polls the server,
/// reconnects with backoff after a network failure, and resumes from its cursor, so nothing sent
/// while it was away is lost. It ends when the task is cancelled; authentication errors end it
/// with the error.
public struct NotificationChannel: AsyncSequence, Sendable {
    public typealias Element = NimbusNotification
    let database: Database
    public let start: NotificationCursor
    /// Seconds each poll waits on the server (at most the server's `maxWaitSeconds`).
    public var waitSeconds: Int = 55

    public func makeAsyncIterator() -> Iterator {
        Iterator(database: database, cursor: start, waitSeconds: waitSeconds)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let database: Database
        var cursor: NotificationCursor
        let waitSeconds: Int
        var buffered: [NimbusNotification] = []
        var backoff = Backoff()

        public mutating func next() async throws -> NimbusNotification? {
            while buffered.isEmpty {
                if Task.isCancelled { return nil }
                do {
                    let page = try await database.pollNotifications(from: cursor, wait: waitSeconds)
                    backoff.reset()
                    cursor = page.cursor
                    buffered = page.notifications
                } catch let error as NimbusError where error.isRetryable {
                    let delay = backoff.nextDelay(retryAfter: error.retryAfter)
                    do { try await Task.sleep(nanoseconds: UInt64(delay * 1e9)) } catch { return nil }
                }
            }
            return buffered.removeFirst()
        }
    }
}

extension Database {
    /// Opens this database's notification channel (`tokens/create`). Without a cursor it starts
    /// at the current position; with a saved one it replays everything after it.
    public func notificationChannel(resumingFrom cursor: NotificationCursor? = nil) async throws -> NotificationChannel {
        if let cursor { return NotificationChannel(database: self, start: cursor) }
        let answer = try await transport.post(url("tokens/create"), body: [:])
        guard let urlText = JSON.string(answer["webcourierURL"]), let channelURL = URL(string: urlText),
              let position = JSON.string(answer["cursor"]) else {
            throw JSON.bad("tokens/create answered without webcourierURL or cursor")
        }
        return NotificationChannel(database: self, start: NotificationCursor(channelURL: channelURL, value: position))
    }

    /// One poll of a notification channel.
    public func pollNotifications(from cursor: NotificationCursor, wait: Int = 0)
        async throws -> (notifications: [NimbusNotification], cursor: NotificationCursor, moreComing: Bool) {
        guard var components = URLComponents(url: cursor.channelURL, resolvingAgainstBaseURL: false) else {
            throw NimbusError(.invalidArguments, reason: "The channel URL \(cursor.channelURL) is not a URL")
        }
        components.queryItems = [URLQueryItem(name: "since", value: cursor.value), URLQueryItem(name: "wait", value: String(wait))]
        guard let url = components.url else { throw NimbusError(.invalidArguments, reason: "The cursor cannot be put in a URL") }
        // A notification carries at most a record's fields (desiredKeys).
        let answer = try await transport.get(url, waitSeconds: wait, limit: await pageLimit(nil, "a page of notifications"))
        guard let next = JSON.string(answer["cursor"]) else { throw JSON.bad("The notification channel answered without a cursor") }
        let nextCursor = NotificationCursor(channelURL: cursor.channelURL, value: next)
        let items = JSON.array(answer["notifications"]) ?? []
        let notifications = try items.enumerated().map { index, item -> NimbusNotification in
            guard let object = JSON.object(item) else { throw JSON.bad("A notification is not an object") }
            // Resuming after the last one of a page is the page's cursor; after an earlier one,
            // the page is replayed from its start (notifications carry ids to skip repeats).
            let notification = try NimbusNotification.fromWire(object, cursor: index == items.count - 1 ? nextCursor : cursor)
            return container.openNotification(notification)
        }
        return (notifications, nextCursor, JSON.bool(answer["moreComing"]) ?? false)
    }
}
