import Foundation
#if canImport(CryptoKit)
import CryptoKit
#elseif canImport(CCrypto)
import CCrypto
#endif

/// The primitives of end-to-end encryption, none written here: AES-256-GCM, HMAC-SHA256 and
/// HKDF-SHA256 (RFC 5869) from CryptoKit on Apple platforms and OpenSSL's libcrypto (the CCrypto
/// system library) on Linux. Known-answer tests (NIST GCM, RFC 5869) run the Linux path.
enum Primitives {
    static let keySize = 32
    static let nonceSize = 12
    static let tagSize = 16

    /// AES-256-GCM: the ciphertext followed by its 16-byte tag.
    static func seal(key: Data, nonce: Data, plaintext: Data, aad: Data) throws -> Data {
        guard key.count == keySize, nonce.count == nonceSize else { throw CryptoFailure.badInput }
#if canImport(CryptoKit)
        let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: AES.GCM.Nonce(data: nonce), authenticating: aad)
        return box.ciphertext + box.tag
#elseif canImport(CCrypto)
        return try LibcryptoGCM.run(encrypt: true, key: key, nonce: nonce, input: plaintext, aad: aad, tag: nil)
#else
        throw CryptoFailure.unavailable
#endif
    }

    /// Opens `ciphertext + tag`; `CryptoFailure.authentication` when anything was changed.
    static func open<AAD: DataProtocol & ContiguousBytes>(key: Data, nonce: Data, sealed: Data, aad: AAD) throws -> Data {
        guard key.count == keySize, nonce.count == nonceSize, sealed.count >= tagSize else { throw CryptoFailure.authentication }
        let ciphertext = sealed.prefix(sealed.count - tagSize)
        let tag = sealed.suffix(tagSize)
#if canImport(CryptoKit)
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: ciphertext, tag: tag)
            return try AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: aad)
        } catch {
            throw CryptoFailure.authentication
        }
#elseif canImport(CCrypto)
        return try LibcryptoGCM.run(encrypt: false, key: key, nonce: nonce, input: ciphertext, aad: aad, tag: tag)
#else
        throw CryptoFailure.unavailable
#endif
    }

    static func hmacSHA256(key: Data, message: Data) -> Data {
#if canImport(CryptoKit)
        return Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
#elseif canImport(CCrypto)
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                let kp = k.baseAddress ?? UnsafeRawPointer(bitPattern: 1)
                let mp = m.bindMemory(to: UInt8.self).baseAddress ?? UnsafePointer(bitPattern: 1)
                _ = HMAC(EVP_sha256(), kp, Int32(k.count), mp, m.count, &digest, &length)
            }
        }
        return Data(digest.prefix(Int(length)))
#else
        return Data()
#endif
    }

    /// HKDF-SHA256 (RFC 5869): extract with `salt`, expand with `info` to `length` bytes (≤ 8160).
    static func hkdf(ikm: Data, salt: Data, info: Data, length: Int) -> Data {
        let prk = hmacSHA256(key: salt.isEmpty ? Data(count: 32) : salt, message: ikm)
        var okm = Data()
        var previous = Data()
        var counter: UInt8 = 1
        while okm.count < length {
            previous = hmacSHA256(key: prk, message: previous + info + Data([counter]))
            okm += previous
            counter &+= 1
        }
        return okm.prefix(length)
    }

    /// Cryptographically secure random bytes (the system generator: getrandom, SecRandom).
    static func random(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}

/// Why a primitive refused.
enum CryptoFailure: Error, Equatable {
    case authentication
    case badInput
    case unavailable
}
