import CCrypto
import Glibc

/// An APNs provider key: Apple's `.p8` file, a PKCS#8 PEM EC private key on P-256, parsed by libcrypto.
///
/// It signs provider tokens (`ProviderToken`) and nothing else. Its description is redacted, so it can
/// sit in a configuration that is logged; the key material never leaves libcrypto.
package struct APNsProviderKey: Sendable, CustomStringConvertible {
    /// Why a key file was refused, as a sentence an operator can act on.
    package struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    private let storage: Storage

    /// Parses the PEM text of a `.p8` file; refuses anything but an unencrypted EC P-256 private key.
    package init(pem: String) throws(ParseError) {
        guard pem.contains("-----BEGIN") else {
            throw ParseError(description: "the APNs key file is not PEM (expected Apple's .p8: a '-----BEGIN PRIVATE KEY-----' block)")
        }
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            // A password callback that supplies none: an encrypted key fails here instead of prompting
            // on the terminal (PEM_read_bio_PrivateKey's default with a NULL callback).
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        ERR_clear_error()
        guard let key else {
            throw ParseError(description: "the APNs key file does not parse as a PEM private key (expected Apple's .p8, unencrypted PKCS#8)")
        }
        let storage = Storage(key)
        guard EVP_PKEY_get_base_id(key) == nimbus_EVP_PKEY_EC else {
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            throw ParseError(description: "the APNs key is a \(type) key, not an EC P-256 key (Apple's .p8 keys are P-256)")
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
            throw ParseError(description: "the APNs key is an EC key on an unnamed curve, not P-256")
        }
        let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard curve == "prime256v1" || curve == "P-256" else {
            throw ParseError(description: "the APNs key is on curve \(curve), not P-256 (prime256v1)")
        }
        self.storage = storage
    }

    /// Reads and parses a `.p8` file.
    package init(contentsOfFile path: String) throws(ParseError) {
        guard let file = fopen(path, "r") else {
            throw ParseError(description: "cannot read the APNs key file \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count == 0 { break }
            bytes += buffer[0..<count]
            // A .p8 is a few hundred bytes; anything this large is not one.
            guard bytes.count <= 64 * 1024 else {
                throw ParseError(description: "the APNs key file \(path) is too large to be a .p8 key")
            }
        }
        try self.init(pem: String(decoding: bytes, as: UTF8.self))
    }

    package var description: String { "APNsProviderKey(EC P-256, redacted)" }

    /// The ES256 signature of `message` (ECDSA P-256 over SHA-256) as JWS wants it (RFC 7518 §3.4):
    /// the 32-byte big-endian r then s, not libcrypto's DER `ECDSA-Sig-Value`.
    package func signES256(_ message: [UInt8]) throws(APNsProviderKey.SigningError) -> [UInt8] {
        let der = try storage.signDER(message)
        return try Self.rawSignature(fromDER: der)
    }

    /// Why a signature could not be made (libcrypto's error queue, summarised).
    package struct SigningError: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// DER `SEQUENCE { r INTEGER, s INTEGER }` → r ‖ s, each left-padded to 32 bytes.
    static func rawSignature(fromDER der: [UInt8]) throws(SigningError) -> [UInt8] {
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else { throw SigningError(description: "libcrypto produced a signature that is not DER: \(openSSLError())") }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return BN_bn2binpad(ECDSA_SIG_get0_r(signature), base, 32) == 32
                && BN_bn2binpad(ECDSA_SIG_get0_s(signature), base + 32, 32) == 32
        }
        guard written else { throw SigningError(description: "an ECDSA signature component does not fit 32 bytes") }
        return raw
    }
}

/// The most recent libcrypto error as text, and the queue cleared.
func openSSLError() -> String {
    let code = ERR_get_error()
    ERR_clear_error()
    guard code != 0 else { return "no libcrypto error reported" }
    var buffer = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(code, &buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension APNsProviderKey {
    /// Owns the `EVP_PKEY`.
    private final class Storage: @unchecked Sendable {
        // @unchecked: the key is never modified after init; OpenSSL 3 keys may be used for signing from
        // several threads at once, each signature having its own EVP_MD_CTX.
        let key: OpaquePointer

        init(_ key: OpaquePointer) {
            self.key = key
        }

        deinit {
            EVP_PKEY_free(key)
        }

        /// ECDSA over SHA-256, DER-encoded.
        func signDER(_ message: [UInt8]) throws(APNsProviderKey.SigningError) -> [UInt8] {
            guard let context = EVP_MD_CTX_new() else { throw .init(description: "EVP_MD_CTX_new failed") }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
                throw .init(description: "EVP_DigestSignInit failed: \(openSSLError())")
            }
            // P-256 DER signatures are at most 72 bytes; ask for the size anyway.
            var length = 0
            guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
                throw .init(description: "EVP_DigestSign (size) failed: \(openSSLError())")
            }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
                throw .init(description: "EVP_DigestSign failed: \(openSSLError())")
            }
            return Array(signature.prefix(length))
        }
    }
}
