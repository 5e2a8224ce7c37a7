import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// The console's Push page (docs/console.md "Push"): mode and topics, the queue, the counters
/// since start, registrations with their last outcome, and the delivery log. APNs tokens are
/// shown by their first digits only; no key material is ever in the store to show.
extension AdminRoutes {
    func registerPush(in router: inout HTTPRouter) {
        get(&router, "/api/push") { request, _ in try await push(request) }
        get(&router, "/api/push/log") { request, _ in try await pushLog(request) }
    }

    /// `?user=` (optional) and `?limit=` (registrations listed).
    private func push(_ request: HTTPRequest) async throws -> JSONValue {
        let limit = try Self.limit(request)
        let user = request.queryParameter("user").flatMap { $0.isEmpty ? nil : $0 }
        let settings = store.database.push
        let queue = try await store.pushReport.queue()
        let (total, registrations) = try await store.pushReport.registrations(user: user, limit: limit)
        let counts = store.pushCounters.snapshot
        return .object([
            "mode": .string(settings.mode.rawValue),
            "topics": .object(JSONObject(settings.topics.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            "queue": .object(["depth": .integer(Int64(queue.depth)), "sending": .integer(Int64(queue.sending)),
                              "oldestQueuedAt": queue.oldestCreatedAt.map(JSONValue.integer) ?? .null,
                              "oldestAgeSeconds": .double(Double(queue.oldestAgeMillis) / 1000)]),
            "sinceStart": .object(["queued": .integer(Int64(counts.queued)), "sent": .integer(Int64(counts.sent)),
                                   "failed": .object(JSONObject(counts.failedByReason.sorted { $0.key < $1.key }
                                       .map { ($0.key, .integer(Int64($0.value))) })),
                                   "skippedByLongPoll": .integer(Int64(counts.skippedByLongPoll))]),
            "registrationCount": .integer(Int64(total)),
            "registrations": .array(registrations.map { registration in
                .object([
                    "user": .string(registration.user), "deviceName": .string(registration.deviceName),
                    "tokenID": .string(registration.deviceTokenID), "container": .string(registration.container),
                    "environment": .string(registration.environment), "apnsEnvironment": .string(registration.apnsEnvironment),
                    "apnsToken": .string(Self.shortened(registration.apnsTokenStart)),
                    "registeredAt": .integer(registration.registeredAt), "queued": .integer(Int64(registration.queued)),
                    "lastAt": registration.lastAt.map(JSONValue.integer) ?? .null,
                    "lastOutcome": registration.lastOutcome.map(JSONValue.string) ?? .null,
                    "lastStatus": registration.lastStatus.map { .integer(Int64($0)) } ?? .null,
                    "lastReason": registration.lastReason.map(JSONValue.string) ?? .null,
                ])
            }),
        ])
    }

    /// `?user=` or `?tokenID=` (not both), `?limit=`: the delivery log, newest first.
    private func pushLog(_ request: HTTPRequest) async throws -> JSONValue {
        let limit = try Self.limit(request)
        let user = request.queryParameter("user").flatMap { $0.isEmpty ? nil : $0 }
        let tokenID = request.queryParameter("tokenID").flatMap { $0.isEmpty ? nil : $0 }
        let scope: PushLogScope
        switch (user, tokenID) {
        case (let user?, nil): scope = .user(user)
        case (nil, let tokenID?): scope = .deviceToken(tokenID)
        case (nil, nil): scope = .everyone
        case (_?, _?): throw SyncError(.badRequest, "Give user or tokenID, not both.")
        }
        return .object(["entries": .array(try await store.pushReport.log(scope, limit: limit).map { entry in
            .object([
                "at": .integer(entry.at), "user": .string(entry.user), "deviceName": entry.deviceName.map(JSONValue.string) ?? .null,
                "tokenID": .string(entry.deviceTokenID), "container": .string(entry.container), "environment": .string(entry.environment),
                "notificationID": .string(entry.notificationID), "pushType": .string(entry.pushType), "outcome": .string(entry.outcome),
                "status": entry.status.map { .integer(Int64($0)) } ?? .null, "reason": entry.reason.map(JSONValue.string) ?? .null,
                "attempts": .integer(Int64(entry.attempts)), "byLongPoll": .bool(entry.byLongPoll),
            ])
        })])
    }

    /// The start of an APNs token as shown: its first digits and an ellipsis.
    static func shortened(_ start: String) -> String {
        String(start.prefix(PushReport.shownTokenDigits)) + "…"
    }
}
