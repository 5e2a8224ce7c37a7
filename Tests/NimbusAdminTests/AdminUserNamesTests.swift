import NimbusAdmin
import NimbusCore
import NimbusHTTP
import Testing

/// Users whose names need percent-encoding in a path (`anna maria`, `jürgen`) reach their pages
/// as the console sends them (`encodeURIComponent`), and their devices can be revoked.
@Suite struct AdminUserNamesTests {
    /// `name` as the console's `encodeURIComponent` puts it into a path.
    static func encoded(_ name: String) -> String {
        PairingURL.percentEncoded(name)
    }

    @Test(arguments: ["anna maria", "jürgen"])
    func devicesZonesPairingAndRevocationWorkForNamesThatNeedEncoding(name: String) async throws {
        try await AdminFixture.with { admin in
            _ = try await admin.store.accounts.addUser(name: name)
            let phone = try await admin.store.accounts.issueToken(user: name, device: "phone")
            let path = "/api/users/\(Self.encoded(name))"
            #expect(path.unicodeScalars.allSatisfy { $0.isASCII })

            let devices = await admin.send("GET", "\(path)/devices")
            #expect(devices.status == 200, "\(devices)")
            #expect(devices.json["user"]?.stringValue == name)
            #expect(devices.items("devices").map { $0["tokenID"]?.stringValue } == [phone.tokenID])

            let zones = await admin.send("GET", "\(path)/zones")
            #expect(zones.status == 200, "\(zones)")
            #expect(zones.json["user"]?.stringValue == name)

            let pairing = await admin.send("POST", "\(path)/pair", body: "{}")
            #expect(pairing.status == 200, "\(pairing)")
            #expect(pairing.json["code"]?.stringValue != nil)

            let issued = await admin.send("POST", "\(path)/tokens", body: #"{"deviceName": "ipad"}"#)
            #expect(issued.status == 200, "\(issued)")

            let revoked = await admin.send("POST", "/api/devices/revoke", body: #"{"tokenID": "\#(phone.tokenID)"}"#)
            #expect(revoked.status == 200, "\(revoked)")
            let after = await admin.send("GET", "\(path)/devices")
            #expect(after.items("devices").first { $0["tokenID"]?.stringValue == phone.tokenID }?["revokedAt"]?.isNull == false)

            let audit = await admin.send("GET", "/api/audit")
            let targets = audit.items("entries").map { "\($0["action"]?.stringValue ?? "") \($0["target"]?.stringValue ?? "")" }
            #expect(targets.contains("device.pair \(name)"), "\(targets)")
            #expect(targets.contains("device.revoke \(phone.tokenID)"), "\(targets)")
        }
    }

    @Test func aPathSegmentThatIsNotUTF8IsNotFound() async throws {
        try await AdminFixture.with { admin in
            let answer = await admin.send("GET", "/api/users/%FF/devices")
            #expect(answer.status == 404, "\(answer)")
        }
    }
}
