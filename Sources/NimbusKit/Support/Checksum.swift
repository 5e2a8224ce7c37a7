import Foundation
#if canImport(CryptoKit)
import CryptoKit
#elseif canImport(CCrypto)
import CCrypto
#endif

/// SHA-256 of files and bytes, to verify downloaded assets against their `fileChecksum`: CryptoKit
/// on Apple platforms, OpenSSL's libcrypto on Linux (the CCrypto system library; no package), both
/// as fast in a debug build as in a release one. Elsewhere, `SoftwareChecksum` (the shared Swift SHA-256).
struct Checksum {
#if canImport(CryptoKit)
    private var hasher = SHA256()

    mutating func update(_ data: Data) { hasher.update(data: data) }

    /// The digest as standard base64, the form of `fileChecksum`.
    mutating func finalizeBase64() -> String { Data(hasher.finalize()).base64EncodedString() }
#elseif canImport(CCrypto)
    private var context = LibcryptoSHA256()

    mutating func update(_ data: Data) {
        if !isKnownUniquelyReferenced(&context) { context = context.copy() }
        context.update(data)
    }

    /// The digest as standard base64, the form of `fileChecksum`.
    mutating func finalizeBase64() -> String {
        if !isKnownUniquelyReferenced(&context) { context = context.copy() }
        return context.finalize().base64EncodedString()
    }
#else
    private var hasher = SoftwareChecksum()

    mutating func update(_ data: Data) { hasher.update(data) }

    /// The digest as standard base64, the form of `fileChecksum`.
    mutating func finalizeBase64() -> String { hasher.finalizeBase64() }
#endif

    /// The base64 SHA-256 of a file, read in 1 MiB pieces.
    static func ofFile(_ url: URL) throws -> (checksum: String, size: Int64) {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = Checksum()
        var size: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(chunk)
            size += Int64(chunk.count)
        }
        return (hasher.finalizeBase64(), size)
    }

    static func of(_ data: Data) -> String {
        var hasher = Checksum()
        hasher.update(data)
        return hasher.finalizeBase64()
    }
}

#if !canImport(CryptoKit) && canImport(CCrypto)
/// libcrypto's SHA-256 through its EVP interface (one context, freed with the object).
final class LibcryptoSHA256 {
    private let context: OpaquePointer?

    init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    private init(copying other: LibcryptoSHA256) {
        context = EVP_MD_CTX_new()
        EVP_MD_CTX_copy_ex(context, other.context)
    }

    deinit { EVP_MD_CTX_free(context) }

    func copy() -> LibcryptoSHA256 { LibcryptoSHA256(copying: self) }

    func update(_ data: Data) {
        data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return }
            _ = EVP_DigestUpdate(context, base, buffer.count)
        }
    }

    /// The digest; the context starts over afterwards.
    func finalize() -> Data {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
        return Data(digest.prefix(Int(length)))
    }
}
#endif
