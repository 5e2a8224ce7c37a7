import Foundation

/// What `SyncEngine.handleRemoteNotification` did (map it to `UIBackgroundFetchResult`:
/// `.newData` → `.newData`, `.alreadyDelivered` → `.noData`, `.failed` → `.failed`).
public enum RemoteNotificationResult: Sendable {
    /// New: the cursor moved past it and the catch-up fetch ran. `earlier` are notifications the
    /// channel had not delivered yet that came before it (show them too: nothing else will).
    case newData(RemoteNotification, earlier: [NimbusNotification])
    /// Already delivered by the channel or an earlier push: nothing to show.
    case alreadyDelivered(RemoteNotification)
    /// Not a Nimbus push of this engine's container and environment, or the catch-up failed
    /// (the notification, when it was read, counts as delivered all the same).
    case failed(NimbusError, RemoteNotification?)
}

extension SyncEngine {
    /// How many delivered notification ids the state file remembers.
    static let deliveredMemory = 256

    /// The engine's position in the notification channel (saved in its state file).
    public var notificationCursor: NotificationCursor? { state.notificationCursor }

    /// One poll of the notification channel from the engine's saved cursor (opening the channel
    /// at the current position the first time). Returns the notifications not delivered before
    /// (by push or an earlier poll) and saves the cursor past them. When a push moved the cursor
    /// while this poll waited, the poll's answer is dropped and `[]` returned: poll again.
    public func pollNotifications(wait: Int = 0) async throws -> [NimbusNotification] {
        let start = try await channelCursor()
        let page = try await database.pollNotifications(from: start, wait: wait)
        guard state.notificationCursor == start else { return [] }
        state.notificationCursor = page.cursor
        let fresh = rememberDelivered(page.notifications)
        try persist()
        return fresh
    }

    /// The notification channel through the engine (live mode for alerts): long-polls from the
    /// saved cursor, reconnecting with backoff, never yielding a notification a push already
    /// delivered. Ends when the consuming task is cancelled, or with a non-retryable error.
    public nonisolated func notifications(waitSeconds: Int = 55) -> AsyncThrowingStream<NimbusNotification, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var backoff = Backoff()
                while !Task.isCancelled {
                    do {
                        let limit = try await database.container.limits().maxWaitSeconds
                        for notification in try await pollNotifications(wait: min(waitSeconds, limit)) {
                            continuation.yield(notification)
                        }
                        backoff.reset()
                    } catch let error as NimbusError where error.isRetryable {
                        let delay = backoff.nextDelay(retryAfter: error.retryAfter)
                        do { try await Task.sleep(nanoseconds: UInt64(delay * 1e9)) } catch { break }
                    } catch {
                        if !Task.isCancelled { continuation.finish(throwing: error) }
                        return
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Applies a push (`userInfo` of `application(_:didReceiveRemoteNotification:…)`): moves the
    /// channel cursor past it, so the channel never delivers it again, and runs one catch-up
    /// fetch (`fetchChanges`) so the announced change is in the local store when this returns.
    /// A notification delivered already (by the channel or another push) only returns
    /// `.alreadyDelivered`. From an actor-isolated caller (the main actor), where `userInfo`
    /// cannot be sent, read it first: `await engine.handle(try RemoteNotification(userInfo:))`.
    public nonisolated func handleRemoteNotification(_ userInfo: [AnyHashable: Any]) async -> RemoteNotificationResult {
        let push: RemoteNotification
        do {
            push = try RemoteNotification(userInfo: userInfo)
        } catch {
            return .failed(error as? NimbusError ?? NimbusError(.invalidArguments, reason: "\(error)"), nil)
        }
        return await handle(push)
    }

    /// Applies a push already read (see `handleRemoteNotification(_:)`).
    public func handle(_ push: RemoteNotification) async -> RemoteNotificationResult {
        let container = database.container
        guard push.container == container.identifier, push.environment == container.configuration.environment.rawValue else {
            return .failed(NimbusError(.invalidArguments, reason: "The push is for \(push.container) (\(push.environment)), not this "
                + "engine's \(container.identifier) (\(container.configuration.environment.rawValue))."), push)
        }
        if (state.deliveredNotificationIDs ?? []).contains(push.notificationID) { return .alreadyDelivered(push) }
        let earlier: [NimbusNotification]
        do {
            guard let caughtUp = try await catchUpChannel(to: push) else { return .alreadyDelivered(push) }
            earlier = caughtUp
            try await fetchChanges()
        } catch {
            return .failed(error as? NimbusError ?? NimbusError(.internalError, reason: "\(error)"), push)
        }
        return .newData(push, earlier: earlier)
    }

    /// Moves the saved cursor past `push`. With no cursor yet, the push's own cursor is the
    /// position; otherwise the channel is read from the saved cursor (cursors are opaque, so
    /// the client cannot tell which of two is later), and what it holds before the push is
    /// returned for the app to show. A saved cursor the server no longer accepts is replaced.
    /// Nil when the channel delivered the push while this ran (the actor let its poll in).
    private func catchUpChannel(to push: RemoteNotification) async throws -> [NimbusNotification]? {
        guard let saved = state.notificationCursor else {
            let channel = try await database.notificationChannel()
            // The push may have come while tokens/create ran: its own cursor is the one to keep.
            state.notificationCursor = NotificationCursor(channelURL: channel.start.channelURL, value: push.cursor)
            let isNew = !rememberDelivered([push.notification(channelURL: channel.start.channelURL)]).isEmpty
            try persist()
            return isNew ? [] : nil
        }
        var cursor = saved
        var earlier: [NimbusNotification] = []
        var pages = 0
        do {
            while pages < 100 {
                pages += 1
                let page = try await database.pollNotifications(from: cursor, wait: 0)
                cursor = page.cursor
                earlier += page.notifications
                if !page.moreComing { break }
            }
        } catch let error as NimbusError where error.code == .invalidArguments {
            cursor = NotificationCursor(channelURL: saved.channelURL, value: push.cursor)
            earlier = []
        }
        // Delivered by the channel meanwhile: so was everything before it, and its cursor stands.
        guard !rememberDelivered([push.notification(channelURL: saved.channelURL)]).isEmpty else { return nil }
        earlier.removeAll { $0.notificationID == push.notificationID }
        // A channel poll that finished meanwhile may have read further; what it delivered is
        // remembered, so reading it again from here shows nothing twice.
        state.notificationCursor = cursor
        let fresh = rememberDelivered(earlier)
        try persist()
        return fresh
    }

    /// Marks notifications delivered and returns those that were not before.
    private func rememberDelivered(_ notifications: [NimbusNotification]) -> [NimbusNotification] {
        var delivered = state.deliveredNotificationIDs ?? []
        var fresh: [NimbusNotification] = []
        for notification in notifications where !delivered.contains(notification.notificationID) {
            fresh.append(notification)
            delivered.append(notification.notificationID)
        }
        if delivered.count > Self.deliveredMemory { delivered.removeFirst(delivered.count - Self.deliveredMemory) }
        state.deliveredNotificationIDs = delivered
        return fresh
    }

    /// The saved cursor, or a new channel's current position (saved).
    private func channelCursor() async throws -> NotificationCursor {
        if let cursor = state.notificationCursor { return cursor }
        let channel = try await database.notificationChannel()
        if let cursor = state.notificationCursor { return cursor }  // set while tokens/create ran
        state.notificationCursor = channel.start
        try persist()
        return channel.start
    }
}
