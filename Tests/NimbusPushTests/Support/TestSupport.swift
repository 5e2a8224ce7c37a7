import Foundation
import NimbusSupport

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A wall clock the test moves by hand.
final class TestClock: WallClock {
    private let now: Lock<Int64>

    init(milliseconds: Int64) {
        now = Lock(milliseconds)
    }

    /// Starts at the real time (the stand-in checks a token's age against its own clock).
    convenience init() {
        self.init(milliseconds: SystemClock().nowMilliseconds())
    }

    func nowMilliseconds() -> Int64 { now.withLock { $0 } }

    func advance(seconds: Int64) {
        now.withLock { $0 += seconds * 1000 }
    }
}

/// A scratch directory under the system's temporary directory, removed by `remove()`.
struct ScratchDirectory {
    let path: String

    init(_ prefix: String) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        self.path = path
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Keys made with the openssl CLI, as an operator makes or Apple hands them out.
enum TestKeys {
    /// An Apple-style .p8 (PKCS#8 PEM, P-256) at `directory/name.p8` and its public half at `name.pub.pem`.
    static func makeP256(in directory: ScratchDirectory, name: String = "key") throws -> (privatePEM: String, publicPath: String) {
        try make(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"], in: directory, name: name)
    }

    /// Any other key openssl can make (`genpkey` arguments), for the refusals.
    static func make(_ genpkeyArguments: [String], in directory: ScratchDirectory, name: String) throws -> (privatePEM: String, publicPath: String) {
        let privatePath = directory.file("\(name).p8"), publicPath = directory.file("\(name).pub.pem")
        try openssl(["genpkey"] + genpkeyArguments + ["-out", privatePath])
        try openssl(["pkey", "-in", privatePath, "-pubout", "-out", publicPath])
        return (try String(contentsOfFile: privatePath, encoding: .utf8), publicPath)
    }

    static func openssl(_ arguments: [String]) throws {
        guard let openssl = Subprocess.find("openssl", fallbackDirectories: ["/usr/bin"]) else {
            throw TestFailure("openssl (the CLI) is missing: run deploy/install-deps.sh or Tests/run.sh")
        }
        let outcome = try Subprocess.run(openssl, arguments)
        guard outcome.succeeded else { throw TestFailure("openssl \(arguments.joined(separator: " ")) failed: \(outcome.output)") }
    }
}
