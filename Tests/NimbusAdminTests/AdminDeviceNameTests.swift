import NimbusAdmin
import NimbusCore
import Testing

/// The console's `POST /api/users/{user}/tokens` refuses a device name one of the user's live
/// tokens has, as enrollment and `nimbus token issue` do (docs/api.md "Devices"), audits only
/// the token it issued, and frees the name when that token is revoked.
@Suite struct AdminDeviceNameTests {
    @Test func aNameInUseIsRefusedAndNotAudited() async throws {
        try await AdminFixture.with { admin in
            _ = try await admin.store.accounts.addUser(name: "anna")
            let watch = try await admin.store.accounts.issueToken(user: "anna", device: "watch")
            let refused = await admin.send("POST", "/api/users/anna/tokens", body: #"{"deviceName": "watch"}"#)
            #expect(refused.status == 400 && refused.serverErrorCode == "BAD_REQUEST", "\(refused)")
            #expect(refused.json["reason"]?.stringValue?.contains("\"watch\" is already the name of one of this user's devices") == true, "\(refused)")
            let audit = await admin.send("GET", "/api/audit")
            #expect(!audit.items("entries").contains { $0["action"]?.stringValue == "device.issue" }, "\(audit)")

            #expect(await admin.send("POST", "/api/devices/revoke", body: #"{"tokenID": "\#(watch.tokenID)"}"#).status == 200)
            let issued = await admin.send("POST", "/api/users/anna/tokens", body: #"{"deviceName": "watch"}"#)
            #expect(issued.status == 200, "\(issued)")
        }
    }
}
