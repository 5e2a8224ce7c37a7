import Foundation
import NimbusWire

/// SHA-256 through the Swift implementation server and client share (NimbusWire's), for
/// platforms with neither CryptoKit nor libcrypto. Compiled everywhere, so the tests hold it
/// equal to the platform hasher `Checksum` uses; 10-25 times slower than that one unoptimised.
struct SoftwareChecksum {
    private var hasher = SHA256()

    mutating func update(_ data: Data) { hasher.update(data) }

    /// The digest as standard base64, the form of `fileChecksum`; the hasher starts over.
    mutating func finalizeBase64() -> String {
        let finished = hasher
        hasher = SHA256()
        return Data(finished.finalize()).base64EncodedString()
    }
}
