import Foundation
import Testing
@testable import NimbusKit

/// Pairing a new device through NimbusKit against the real server (docs/api.md "Devices").
@Suite("Device pairing against the real server")
struct DevicePairingTests {
    @Test func aMacPairsAPhoneThatEnrollsKeepsItsTokenAndCanBeRevoked() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let mac = server.container(token: try server.device(user: "ada", device: "mac"))
        let asked = Date()
        let invitation = try await mac.pairNewDevice(deviceName: "iphone")
        // The code lives pairingCodeSeconds (600) from when the server made it, between asking and
        // the answer (a loaded machine took 15 s to come back once).
        #expect(invitation.expiresAt >= asked.addingTimeInterval(599))
        #expect(invitation.expiresAt <= Date().addingTimeInterval(601))
        #expect(invitation.code.count == 12)
        #expect(invitation.pairingURL.absoluteString.hasPrefix("nimbus://pair?server=http%3A%2F%2F127.0.0.1%3A"))

        let directory = temporaryDirectory("credentials")
        defer { try? FileManager.default.removeItem(at: directory) }
        let credentials = FileCredentialStore(directory: directory)
        let phone = try await Container.enroll(pairingURL: invitation.pairingURL, deviceName: "iphone",
                                               identifier: TestServer.container, credentials: credentials)
        #expect(try await phone.currentUserRecordName() == (try await mac.currentUserRecordName()))
        let kept = try #require(try credentials.credential(for: server.url))
        #expect(kept.token == phone.configuration.token && kept.deviceName == "iphone")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        let mode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(files[0]).path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // The code was single-use; a typed code works like the URL.
        await #expect(throws: NimbusError.self) {
            try await Container.enroll(pairingURL: invitation.pairingURL, deviceName: "ipad", identifier: TestServer.container,
                                       credentials: credentials)
        }
        let typed = try await mac.pairNewDevice()
        let ipad = try await Container.enroll(code: typed.code.lowercased(), serverURL: server.url, deviceName: "ipad",
                                              identifier: TestServer.container, credentials: credentials)

        let devices = try await phone.devices()
        #expect(devices.map(\.deviceName) == ["mac", "iphone", "ipad"])
        #expect(devices.filter(\.isCurrent).map(\.deviceName) == ["iphone"])
        let phoneID = try #require(devices.first { $0.deviceName == "iphone" }?.tokenID)
        try await mac.revokeDevice(tokenID: phoneID)
        do {
            _ = try await phone.currentUserRecordName()
            Issue.record("a revoked device still answered")
        } catch let error as NimbusError {
            #expect(error.code == .notAuthenticated)
        }
        #expect(try await ipad.devices().count == 2)
    }

    @Test func aPairingURLIsCheckedBeforeAnythingIsSent() {
        for text in ["https://example.com/pair?code=X", "nimbus://pair?code=ABCD", "nimbus://pair?server=ftp%3A%2F%2Fx&code=A",
                     "nimbus://other?server=http%3A%2F%2Fx&code=A"] {
            #expect(throws: NimbusError.self) { try PairingLink(URL(string: text)!) }
        }
        #expect(throws: Never.self) { try PairingLink(URL(string: "nimbus://pair?server=http%3A%2F%2F10.0.0.2%3A8080&code=ABCDEFGHJK#k=secret")!) }
    }
}
