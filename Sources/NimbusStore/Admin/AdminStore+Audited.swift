import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The admin API's changes, each with its audit entry written in the change's own transaction:
/// both commit or neither does (a failed change leaves no entry, a failed entry no change).
/// `deleteRecord` is in `AdminStore+Records`; a prune, which commits in batches, is audited as it
/// starts (`audit(_:)`).
extension AdminStore {
    /// A single-use pairing code for `user`'s new device; audited as `device.pair`.
    package func pair(user: String, deviceNameHint: String?, limits: Limits, by admin: AdminIdentity) async throws -> IssuedPairingCode {
        let userID = try await devices.user(named: user)
        let entry = AdminAudit(admin, action: "device.pair", target: user, detail: ["deviceName": deviceNameHint.map(JSONValue.string) ?? .null])
        return try await devices.pair(userID: userID, byToken: nil, deviceNameHint: deviceNameHint, limits: limits, alongside: entry.write)
    }

    /// A device token issued at once; audited as `device.issue` with the new token's id.
    package func issueDeviceToken(user: String, deviceName: String, by admin: AdminIdentity) async throws -> IssuedToken {
        try await accounts.issueToken(user: user, device: deviceName) { connection, token in
            try AdminAudit(admin, action: "device.issue", target: token.tokenID,
                           detail: ["user": .string(user), "deviceName": .string(deviceName)]).write(on: connection)
        }
    }

    /// Revokes a device token; audited as `device.revoke`.
    package func revokeDeviceToken(tokenID: String, by admin: AdminIdentity) async throws {
        try await accounts.revokeToken(tokenID: tokenID, alongside: AdminAudit(admin, action: "device.revoke", target: tokenID).write)
    }

    /// Loads a schema file into an environment; audited as `schema.import`.
    package func importSchema(_ schema: ContainerSchema, environment: Environment, by admin: AdminIdentity) async throws {
        let entry = AdminAudit(admin, action: "schema.import", target: schema.container,
                               detail: ["environment": .string(environment.rawValue), "recordTypes": .integer(Int64(schema.recordTypes.count))])
        try await schemas.importSchema(schema, environment: environment, alongside: entry.write)
    }

    /// Copies a container's development schema to production; audited as `schema.deploy`.
    package func deploySchema(container: String, by admin: AdminIdentity) async throws -> ContainerSchema {
        try await schemas.deploySchema(container: container) { connection, deployed in
            try AdminAudit(admin, action: "schema.deploy", target: container,
                           detail: ["recordTypes": .integer(Int64(deployed.recordTypes.count))]).write(on: connection)
        }
    }
}
