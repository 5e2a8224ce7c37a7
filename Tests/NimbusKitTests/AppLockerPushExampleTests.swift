import Foundation
import Testing
@testable import NimbusKit

/// Examples/AppLockerSync's push paths (the code an iOS app delegate calls) run as the built
/// binary against the real server.
@Suite("AppLockerSync push")
struct AppLockerPushExampleTests {
    static let appLocker = "iCloud.com.mirxa.AppLocker"

    func run(_ server: TestServer, token: String, _ arguments: [String]) throws -> String {
        let tool = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("AppLockerSync")
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["NIMBUS_URL": server.url.absoluteString, "NIMBUS_TOKEN": token, "NIMBUS_ENVIRONMENT": "development"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0 else { throw TestFailure("AppLockerSync \(arguments) exited \(process.terminationStatus): \(text)") }
        return text
    }

    @Test func thePhoneRegistersReadsAPushAndUnregisters() async throws {
        let server = try TestServer.startWithPush(containers: [Self.appLocker])
        defer { server.stop() }
        let token = try server.device(user: "owner", device: "iphone")
        let hex = String(repeating: "ab01", count: 16)
        #expect(try run(server, token: token, ["phone", "register-push", hex, "development"]) == "push direct development \(hex)")
        let container = Container(identifier: Self.appLocker, configuration: server.configuration(token: token))
        #expect(try await container.devices().first { $0.isCurrent }?.push.map(\.container) == [Self.appLocker])

        let payload = #"""
            {"aps": {"alert": {"title": "Blocked"}}, "nimbus": {"notificationID": "n", "subscriptionID": "blocked-apps",
             "notificationType": "query", "reason": "recordCreated", "recordName": "r-1", "recordType": "BlockedAppEvent",
             "fields": {"appName": {"value": "Safari", "type": "STRING"}},
             "container": "iCloud.com.mirxa.AppLocker", "environment": "development", "cursor": "c"}}
            """#
        let file = temporaryDirectory("push").appendingPathComponent("push.json")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(payload.utf8).write(to: file)
        #expect(try run(server, token: token, ["phone", "handle-push", file.path]) == "query blocked-apps recordCreated r-1 appName=Safari")

        #expect(try run(server, token: token, ["phone", "unregister-push"]) == "unregistered true")
        #expect(try await container.devices().first { $0.isCurrent }?.push.isEmpty == true)
    }
}
