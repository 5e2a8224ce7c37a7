import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// The console's operations pages: retention (with dry runs and prunes) and storage.
extension AdminRoutes {
    func registerOperations(in router: inout HTTPRouter) {
        get(&router, "/api/retention") { _, _ in try await retention() }
        post(&router, "/api/retention/runs") { request, admin in try await startPrune(request, admin: admin) }
        get(&router, "/api/retention/runs/current") { _, _ in currentPrune() }
        get(&router, "/api/storage") { _, _ in try await storage() }
    }

    /// Seconds until the scheduled prune; a day when it is disabled (what the page calls "next").
    private var secondsToNextPrune: Int64 {
        guard let next = facts.pruneSchedule.nextAt else { return 86_400 }
        return max(0, Int64(next.timeIntervalSinceNow))
    }

    private func retention() async throws -> JSONValue {
        let options = facts.pruneSchedule.options
        let summary = try await store.admin.retention(tombstoneSeconds: options.tombstonesOlderThanSeconds,
                                                      secondsToNextPrune: secondsToNextPrune)
        return .object([
            "tombstoneRetentionDays": .integer(options.tombstonesOlderThanSeconds / 86_400),
            "nextPruneAt": Self.milliseconds(facts.pruneSchedule.nextAt),
            "types": .array(summary.types.map { type in
                .object(["recordType": .string(type.recordType), "expiringWithinDay": .integer(Int64(type.expiringWithinDay)),
                         "expiringWithinWeek": .integer(Int64(type.expiringWithinWeek)), "tombstones": .integer(Int64(type.tombstones)),
                         "tombstonesExpiringNext": .integer(Int64(type.tombstonesExpiringNext))])
            }),
            "horizons": .array(summary.horizons.map { zone in
                .object(["user": .string(zone.user), "container": .string(zone.container), "environment": .string(zone.environment),
                         "zoneName": .string(zone.zoneName), "horizon": .integer(zone.horizon), "head": .integer(zone.head)])
            }),
            "devicesFallingBehind": .array(summary.devicesFallingBehind.map { device in
                .object(["user": .string(device.user), "deviceName": .string(device.deviceName), "tokenID": .string(device.tokenID),
                         "container": .string(device.container), "environment": .string(device.environment),
                         "zoneName": .string(device.zoneName), "lastSyncAt": Self.milliseconds(device.lastSyncAt)])
            }),
        ])
    }

    /// `{"dryRun": true|false}`: starts a run with the scheduled prune's options. A real prune
    /// commits in batches, so no one transaction holds it and its audit entry: the entry is
    /// written as the run starts, before it deletes anything, and a run whose entry fails deletes
    /// nothing.
    private func startPrune(_ request: HTTPRequest, admin: AdminIdentity) async throws -> JSONValue {
        guard case .bool(let dryRun)? = try RequestInput.parseBody(request.body)["dryRun"] else {
            throw SyncError(.badRequest, "The body must be {\"dryRun\": true} or {\"dryRun\": false}.")
        }
        let store = store
        let started = try pruneJob.start(store: store, options: facts.pruneSchedule.options, limits: limits, dryRun: dryRun, by: admin) { run in
            if !dryRun { try await store.admin.audit(AdminAudit(admin, action: "retention.prune", target: "all", detail: ["run": .integer(Int64(run))])) }
        }
        return Self.describe(started)
    }

    private func currentPrune() -> JSONValue {
        pruneJob.current.map(Self.describe) ?? .object(["run": .null])
    }

    static func describe(_ state: ConsolePruneJob.State) -> JSONValue {
        var object: JSONObject = [
            "run": .integer(Int64(state.id)), "dryRun": .bool(state.dryRun), "startedBy": .string(state.startedBy),
            "startedAt": milliseconds(state.startedAt), "finishedAt": milliseconds(state.finishedAt),
            "progress": .array(state.lines.map(JSONValue.string)), "error": state.error.map(JSONValue.string) ?? .null,
        ]
        if let report = state.report {
            object["report"] = .object([
                "counts": .array(report.counts.sorted { ($0.container, $0.environment, $0.owner, $0.zoneName, $0.recordType) <
                                                        ($1.container, $1.environment, $1.owner, $1.zoneName, $1.recordType) }.map { count in
                    .object(["container": .string(count.container), "environment": .string(count.environment), "user": .string(count.owner),
                             "zoneName": .string(count.zoneName), "recordType": .string(count.recordType),
                             "records": .integer(Int64(count.records)), "tombstones": .integer(Int64(count.tombstones))])
                }),
                "assets": .integer(Int64(report.assets)), "assetBytes": .integer(report.assetBytes),
                "notifications": .integer(Int64(report.notifications)), "seconds": .double(report.seconds),
            ])
        }
        return .object(object)
    }

    private func storage() async throws -> JSONValue {
        let summary = try await store.admin.storage()
        return .object([
            "userQuotaBytes": .integer(Int64(limits.userQuotaBytes)),
            "databases": .array(summary.databases.map { database in
                .object(["user": .string(database.user), "container": .string(database.container), "environment": .string(database.environment),
                         "records": .integer(Int64(database.records)), "tombstones": .integer(Int64(database.tombstones)),
                         "recordBytes": .integer(database.recordBytes), "assets": .integer(Int64(database.assets)),
                         "assetBytes": .integer(database.assetBytes)])
            }),
            "quota": .array(summary.assetBytesByUser.map { user in
                .object(["user": .string(user.user), "assetBytes": .integer(user.bytes)])
            }),
            "largestAssets": .array(summary.largestAssets.map { asset in
                .object(["user": .string(asset.user), "container": .string(asset.container), "size": .integer(asset.size),
                         "createdAt": Self.milliseconds(asset.createdAt), "references": .integer(Int64(asset.references))])
            }),
            "orphans": .object(["assets": .integer(Int64(summary.orphans)), "bytes": .integer(summary.orphanBytes),
                                "graceSeconds": .integer(facts.pruneSchedule.options.assetGraceSeconds)]),
        ])
    }
}
