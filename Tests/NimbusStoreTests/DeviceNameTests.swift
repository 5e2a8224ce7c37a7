import NimbusTestSupport
import Foundation
import NimbusCore
import NimbusPostgres
@testable import NimbusStore
import NimbusSupport
import Testing

/// A device name belongs to one live device of a user (docs/api.md "Devices"), whichever path
/// creates the token, and migration 0014 renames the duplicates it finds.
@Suite struct DeviceNameTests {
    @Test func tokenIssueRefusesANameInUseAsEnrollmentDoes() async throws {
        try await StoreFixture.with { fixture in
            let accounts = fixture.store.accounts
            _ = try await accounts.addUser(name: "alice")
            _ = try await accounts.addUser(name: "bob")
            let mac = try await accounts.issueToken(user: "alice", device: "mac")
            do {
                _ = try await accounts.issueToken(user: "alice", device: "mac")
                Issue.record("a second live \"mac\" of alice was issued")
            } catch let error as SyncError {
                #expect(error.code == .badRequest)
                #expect(error.reason.contains("\"mac\" is already the name of one of this user's devices"), "\(error.reason)")
            }
            _ = try await accounts.issueToken(user: "bob", device: "mac")
            try await accounts.revokeToken(tokenID: mac.tokenID)
            _ = try await accounts.issueToken(user: "alice", device: "mac")
            await #expect(throws: SyncError.self) { try await accounts.issueToken(user: "nobody", device: "mac") }
        }
    }

    @Test func concurrentTokenIssuesOfOneNameMakeOneToken() async throws {
        try await StoreFixture.with { fixture in
            let accounts = fixture.store.accounts
            _ = try await accounts.addUser(name: "alice")
            let issued = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<6 { group.addTask { (try? await accounts.issueToken(user: "alice", device: "ipad")) != nil } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(issued == 1)
        }
    }

    @Test func concurrentEnrollmentsWithOneNameMakeOneToken() async throws {
        try await StoreFixture.with(poolSize: 12) { fixture in
            let session = try await fixture.session(user: "alice", device: "mac")
            var limits = Limits()
            limits.maxPendingPairingCodes = 40
            let devices = fixture.store.devices
            for round in 0..<4 {
                var codes: [PairingCode] = []
                for _ in 0..<8 { codes.append(try await devices.pair(userID: session.userID, byToken: nil, deviceNameHint: nil, limits: limits).code) }
                let enrolled = await withTaskGroup(of: Bool.self) { group in
                    for code in codes { group.addTask { (try? await devices.enroll(code: code, deviceName: "phone \(round)")) != nil } }
                    return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                #expect(enrolled == 1, "round \(round)")
            }
        }
    }

    @Test func theMigrationRenamesLaterLiveDuplicatesAndKeepsTheOldest() async throws {
        try await StoreFixture.with { fixture in
            let long = String(repeating: "x", count: 255)
            let ids = try await fixture.run { connection -> [String] in
                // The database as 0013 left it, with names used twice.
                try connection.run("DROP INDEX device_tokens_live_name")
                try connection.run("DROP TABLE enrollment_failures")
                try connection.run("INSERT INTO users (name, record_name) VALUES ('alice', '_a'), ('bob', '_b')")
                let rows: [(String, String, String, Int, Bool)] = [
                    ("alice", "tok_1", "mac", 1, false), ("alice", "tok_2", "mac", 2, false), ("alice", "tok_3", "mac", 3, false),
                    ("alice", "tok_0", "mac", 0, true), ("alice", "tok_4", "phone", 4, false), ("bob", "tok_5", "mac", 5, false),
                    ("alice", "tok_6", long, 6, false), ("alice", "tok_7", long, 7, false),
                ]
                for (user, id, name, minute, revoked) in rows {
                    try connection.run("""
                        INSERT INTO device_tokens (user_id, token_id, token_sha256, device_name, created_at, revoked_at)
                        SELECT id, \(id), \(Array(id.utf8)), \(name), now() + \(Int64(minute)) * interval '1 minute',
                               CASE WHEN \(revoked) THEN now() END
                        FROM users WHERE name = \(user)
                        """)
                }
                let migration = StoreFixture.migrationsDirectory.appendingPathComponent("0014_hardening.sql")
                try connection.runScript(try String(contentsOf: migration, encoding: .utf8))
                return try connection.query("SELECT token_id || '=' || device_name FROM device_tokens ORDER BY token_id") { try $0.string(0) }
            }
            let renamedLong = String(repeating: "x", count: 255 - 8) + " (tok_7)"
            #expect(ids == ["tok_0=mac", "tok_1=mac", "tok_2=mac (tok_2)", "tok_3=mac (tok_3)", "tok_4=phone", "tok_5=mac",
                            "tok_6=\(long)", "tok_7=\(renamedLong)"])
            #expect(renamedLong.count == 255)
        }
    }
}
