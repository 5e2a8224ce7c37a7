import CCrypto
import Foundation
import NimbusSupport

/// Checks a JWT's ES256 signature with libcrypto against a public key file: independent of the
/// signing code path except for the library itself (r ‖ s rebuilt into DER, EVP_DigestVerify).
enum ES256Verifier {
    static func verify(jwt: String, publicKeyPath: String) throws -> Bool {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let raw = Base64URL.decode(parts[2]), raw.count == 64 else { return false }
        let pem = try String(contentsOfFile: publicKeyPath, encoding: .utf8)
        let key: OpaquePointer? = Array(pem.utf8).withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let key else { throw TestFailure("cannot read the public key \(publicKeyPath)") }
        defer { EVP_PKEY_free(key) }

        guard let signature = ECDSA_SIG_new() else { throw TestFailure("ECDSA_SIG_new failed") }
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(Array(raw[0..<32]), 32, nil), s = BN_bin2bn(Array(raw[32..<64]), 32, nil)
        guard ECDSA_SIG_set0(signature, r, s) == 1 else { throw TestFailure("ECDSA_SIG_set0 failed") }
        var derPointer: UnsafeMutablePointer<UInt8>?
        let derLength = i2d_ECDSA_SIG(signature, &derPointer)
        guard derLength > 0, let derPointer else { throw TestFailure("i2d_ECDSA_SIG failed") }
        defer { CRYPTO_free(derPointer, #file, #line) }

        guard let context = EVP_MD_CTX_new() else { throw TestFailure("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { throw TestFailure("EVP_DigestVerifyInit failed") }
        let message = Array((parts[0] + "." + parts[1]).utf8)
        return EVP_DigestVerify(context, derPointer, Int(derLength), message, message.count) == 1
    }
}
