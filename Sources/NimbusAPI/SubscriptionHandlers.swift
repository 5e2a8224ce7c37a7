import Foundation
import NimbusCore
import NimbusSupport
import NimbusHTTP
import NimbusStore

/// `subscriptions/list|lookup|modify` and `tokens/create`.
struct SubscriptionHandlers: Sendable {
    let subscriptions: SubscriptionStore
    let schemas: SchemaStore
    let notifications: NotificationStore
    let limits: Limits

    func list(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse? {
        let subscriptions = try await subscriptions.on(context.execution).listSubscriptions(context.session)
        return Wire.json(.object(["subscriptions": .array(subscriptions.map(\.json))]))
    }

    func lookup(_ context: DatabaseRoutes.Context, _ request: LookupSubscriptionsRequest) async throws -> HTTPResponse? {
        let ids = request.ids
        let all = Dictionary(try await subscriptions.on(context.execution).listSubscriptions(context.session).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let items: [JSONValue] = ids.map { id in
            all[id]?.json ?? Wire.item(ItemError(.notFound, "Subscription \(Names.quoted(id)) does not exist."),
                                        extra: ["subscriptionID": .string(id)])
        }
        return Wire.json(.object(["subscriptions": .array(items)]))
    }

    func modify(_ context: DatabaseRoutes.Context, _ request: ModifySubscriptionsRequest) async throws -> HTTPResponse? {
        let schema = try await schemas.on(context.execution).schema(container: context.session.container, environment: context.session.environment)
        let planned = request.entries(schema: schema.recordTypes)
        let operations = planned.compactMap { entry -> SubscriptionOperation? in
            if case .run(let operation) = entry { return operation } else { return nil }
        }
        var results = try await subscriptions.on(context.execution).modifySubscriptions(context.session, operations: operations).makeIterator()
        let items: [JSONValue] = planned.map { entry in
            switch entry {
            case .refused(let id, let error):
                return Wire.item(error, extra: ["subscriptionID": .string(id)])
            case .run:
                switch results.next() {
                case .saved(let subscription)?: return subscription.json
                case .deleted(let id)?: return .object(["subscriptionID": .string(id), "deleted": .bool(true)])
                case .failed(let id, let error)?: return Wire.item(error, extra: ["subscriptionID": .string(id)])
                case nil: return Wire.item(ItemError(.internalError, "No result."))
                }
            }
        }
        return Wire.json(.object(["subscriptions": .array(items)]))
    }

    /// `tokens/create`: the notification channel of this database and its current cursor.
    func createToken(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse? {
        let session = context.session
        let channel = notifications.channelID(databaseID: session.databaseID)
        let sequence = try await notifications.on(context.execution).currentNotificationSequence(databaseID: session.databaseID)
        return Wire.json(.object([
            "apnsToken": .string(channel),
            "webcourierURL": .string(context.baseURL + "/webcourier/1/" + channel),
            "cursor": .string(notifications.cursor(databaseID: session.databaseID, sequence: sequence)),
        ]))
    }
}

/// `GET /webcourier/1/{channel}?since=<cursor>&wait=<0..55>`: the long-poll that replaces push.
struct WebcourierRoute: Sendable {
    let notifications: NotificationStore
    let hub: ChangeHub
    let liveTokens: LiveTokens
    let limits: Limits
    /// With push on: a poll naming a cursor drops the device's pushes that waited for it
    /// (long-poll first).
    let pushOutbox: PushOutboxStore?

    static let pattern = "/webcourier/1/:channel"

    func register(in router: inout HTTPRouter, api: API.RouteBuilder) {
        let notifications = notifications, hub = hub, liveTokens = liveTokens, limits = limits, pushOutbox = pushOutbox
        router.add("GET", Self.pattern, api.streaming(Self.pattern) { request, answering in
            try await Self.poll(request, answering: answering, notifications: notifications, hub: hub, liveTokens: liveTokens, limits: limits,
                                pushOutbox: pushOutbox)
        })
    }

    private static func poll(_ request: HTTPRequest, answering: API.Answering, notifications: NotificationStore, hub: ChangeHub,
                             liveTokens: LiveTokens, limits: Limits, pushOutbox: PushOutboxStore?) async throws -> HTTPResponse? {
        let digest = try answering.bearer.digest()
        let notFound = SyncError(.notFound, "There is no notification channel at \(request.path).")
        guard let databaseID = notifications.databaseID(channel: request.pathParameters["channel"] ?? "") else {
            // Authenticate first, so a bad token is 401 whatever the channel.
            if case .unauthenticated = try await notifications.on(request.execution).channelAccess(tokenDigest: digest, databaseID: -1) {
                throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
            }
            throw notFound
        }
        let session: Session
        switch try await notifications.on(request.execution).channelAccess(tokenDigest: digest, databaseID: databaseID) {
        case .unauthenticated: throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
        case .notFound: throw notFound
        case .granted(let granted): session = granted
        }
        var after: Int64 = 0
        let sinceText = request.queryParameter("since")
        if let since = sinceText, !since.isEmpty {
            guard let sequence = notifications.sequence(cursor: since, databaseID: databaseID) else {
                throw SyncError(.badRequest, "since is not a cursor of this channel.")
            }
            after = sequence
            if let pushOutbox, sequence > 0 {
                // The device has everything up to `since`: its pushes waiting out the grace for
                // those are not needed. A failure here must not fail the poll (the push goes out).
                do { try await pushOutbox.on(request.execution).deliveredByLongPoll(session, upTo: sequence) } catch {
                    Logger(subsystem: "push").warning("could not drop pushes delivered by long-poll", ["error": "\(error)"])
                }
            }
        }
        var wait = 0
        if let text = request.queryParameter("wait") {
            guard let seconds = Int(text), seconds >= 0, seconds <= limits.maxWaitSeconds else {
                throw SyncError(.badRequest, "wait must be a whole number of seconds from 0 to \(limits.maxWaitSeconds).")
            }
            wait = seconds
        }
        if let pushOutbox, wait > 0 {
            // Long-poll first on every instance: marked before the first read, so a write that
            // this read misses holds the device's push for the grace. A failure must not fail the
            // poll (pushes then go at once).
            do { try await pushOutbox.on(request.execution).longPollParked(session, waitSeconds: wait) } catch {
                Logger(subsystem: "push").warning("could not mark a parked long-poll", ["error": "\(error)"])
            }
        }
        let limit = limits.defaultResultsLimit
        @Sendable func answer(_ page: NotificationPage) -> JSONValue {
            .object(["notifications": .array(page.notifications),
                     "cursor": .string(notifications.cursor(databaseID: databaseID, sequence: page.cursor)),
                     "moreComing": .bool(page.moreComing)])
        }
        let first = try await notifications.on(request.execution).notifications(session, after: after, limit: limit)
        if !first.notifications.isEmpty || first.moreComing || wait == 0 {
            return Wire.json(answer(first))
        }
        let position = first.cursor
        let empty = JSONValue.object(["notifications": .array([]),
                                      "cursor": .string(sinceText.flatMap { $0.isEmpty ? nil : $0 } ?? notifications.cursor(databaseID: databaseID, sequence: position)),
                                      "moreComing": .bool(false)])
        let poll = LongPoll(writer: answering.writer, hub: hub, tokenID: session.tokenID, liveTokens: liveTokens,
                            emptyAnswer: empty.serialized(), onFinish: answering.answered,
                            isRelevant: { $0.kind == .notifications && $0.sequence > position },
                            reread: { _ in
                                // On the wake's task (not the request's loop): `notifications` runs `.offloaded`.
                                let page = try await notifications.notifications(session, after: position, limit: limit)
                                return page.notifications.isEmpty ? nil : answer(page).serialized()
                            })
        try poll.start(databaseID: databaseID, deviceKey: "\(session.userID)/\(session.deviceID)", wait: wait,
                       heartbeatSeconds: limits.heartbeatSeconds)
        return nil
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
