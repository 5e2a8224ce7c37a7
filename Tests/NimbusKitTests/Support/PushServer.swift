import Foundation
@testable import NimbusKit

extension TestServer {
    /// The bundle id the push tests' container is mapped to.
    static let pushTopic = "com.nimbus.KitTests"

    /// A server with push on (`--push direct`) for the tests' container. When this build's
    /// `serve` wants an APNs key, a fresh P-256 key is made and the pushes go to a port where
    /// nothing listens (they fail to send; these tests look at registration and the channel).
    static func startWithPush(containers: [String] = [container]) throws -> TestServer {
        let topics = containers.map { "\($0)=\(pushTopic)" }.joined(separator: ",")
        var arguments = ["--push", "direct", "--apns-topics", topics]
        let help = (try? run(nimbusBinary(), ["serve", "--help"])) ?? ""
        if help.contains("--apns-key-file") {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbuskit-apns-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let key = directory.appendingPathComponent("AuthKey.p8")
            let script = "openssl ecparam -genkey -name prime256v1 | openssl pkcs8 -topk8 -nocrypt -out '\(key.path)'"
            try run(URL(fileURLWithPath: "/bin/sh"), ["-c", script])
            arguments += ["--apns-key-file", key.path, "--apns-key-id", "KEY1234567", "--apns-team-id", "TEAM123456",
                          "--apns-url", "https://127.0.0.1:1"]
        }
        return try start(arguments)
    }
}
