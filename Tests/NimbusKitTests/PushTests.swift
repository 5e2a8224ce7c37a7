import Foundation
import Testing
@testable import NimbusKit

/// Push registration and `handleRemoteNotification` against the real server.
@Suite("Push against the server")
struct PushTests {
    static let token = Data((0..<32).map { UInt8($0 * 7 & 0xff) })

    @Test func registrationIsStoredShownAndRemoved() async throws {
        let server = try TestServer.startWithPush()
        defer { server.stop() }
        let container = server.container(token: try server.device(user: "alice", device: "iphone"))
        let database = container.privateDatabase
        let registration = try await database.registerForPush(apnsToken: Self.token, environment: .development)
        #expect(registration.push == .direct)
        #expect(registration.isActive)
        #expect(registration.apnsToken == Self.token.nimbusHexString)
        #expect(registration.apnsEnvironment == .development)
        let current = try #require(try await container.devices().first { $0.isCurrent })
        #expect(current.push.count == 1)
        #expect(current.push.first?.container == TestServer.container)
        #expect(current.push.first?.environment == "development")
        #expect(current.push.first?.apnsEnvironment == .development)
        #expect(try await database.unregisterForPush())
        #expect(try await container.devices().first { $0.isCurrent }?.push.isEmpty == true)
        #expect(try await database.unregisterForPush() == false)
    }

    @Test func aMalformedTokenIsAClearError() async throws {
        let server = try TestServer.startWithPush()
        defer { server.stop() }
        let container = server.container(token: try server.device(user: "alice", device: "iphone"))
        for bad in [Data(), Data([1, 2, 3, 4])] {
            do {
                _ = try await container.privateDatabase.registerForPush(apnsToken: bad, environment: .production)
                Issue.record("a \(bad.count)-byte token was accepted")
            } catch let error as NimbusError {
                #expect(error.code == .invalidArguments)
                #expect(error.reason.contains("apnsToken"), "\(error.reason)")
            }
        }
        #expect(try await container.devices().first { $0.isCurrent }?.push.isEmpty == true)
    }

    @Test func pushOffIsAnAnswerNotAnError() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let container = server.container(token: try server.device(user: "alice", device: "iphone"))
        let registration = try await container.privateDatabase.registerForPush(apnsToken: Self.token, environment: .production)
        #expect(registration.push == .off)
        #expect(!registration.isActive)
        #expect(try await container.devices().first { $0.isCurrent }?.push.isEmpty == true)
    }
}
