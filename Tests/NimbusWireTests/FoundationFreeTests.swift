import Foundation
import Testing

/// NimbusWire is what the server and NimbusKit share; it stays Foundation-free (libc only), so the
/// server's hot paths never pay Foundation's bridging and the client takes nothing it lacks.
@Suite struct FoundationFreeTests {
    @Test func noSourceOfNimbusWireImportsFoundation() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources/NimbusWire")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(files.count >= 10)
        for file in files {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                let words = line.split(separator: " ")
                guard let module = words.firstIndex(of: "import").map({ words.index(after: $0) }), module < words.endIndex else { continue }
                #expect(!words[module].hasPrefix("Foundation"), "\(file.lastPathComponent): \(line)")
            }
        }
    }
}
