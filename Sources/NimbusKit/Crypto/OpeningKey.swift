import Foundation
#if canImport(CryptoKit)
import CryptoKit
#endif

/// AES-256-GCM opening of many small messages under one key: a page's sealed fields under one
/// zone key (`FieldOpener`). Each plaintext is handed to a closure instead of returned as a `Data`
/// of its own. With libcrypto the opening context is set up (or borrowed from `GCMContexts`) once
/// and kept across messages, each message setting only its nonce, and every plaintext is written
/// into one buffer that grows to the largest seen; a message that does not open drops the context
/// (its state is then unknown) and the next one sets up another. With CryptoKit each message is
/// opened on its own. Used by one thread at a time (one opener per page).
final class OpeningKey {
    let key: Data
#if canImport(CryptoKit)
    private let symmetric: SymmetricKey
#elseif canImport(CCrypto)
    private var context: GCMContext?
    private var buffer: UnsafeMutableRawPointer?
    private var capacity = 0
#endif

    init(_ key: Data) throws {
        guard key.count == Primitives.keySize else { throw CryptoFailure.badInput }
        self.key = key
#if canImport(CryptoKit)
        symmetric = SymmetricKey(data: key)
#endif
    }

    /// Opens `ciphertext` + `tag` with `nonce` and `aad`, and gives `body` the plaintext (valid
    /// only inside it); `CryptoFailure.authentication` when anything was changed. What `body`
    /// throws is thrown as it is.
    func open<R>(nonce: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
                 aad: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard nonce.count == Primitives.nonceSize, tag.count == Primitives.tagSize else { throw CryptoFailure.authentication }
#if canImport(CryptoKit)
        let opened: Data
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: Data(nonce)), ciphertext: Data(ciphertext), tag: Data(tag))
            opened = try AES.GCM.open(box, using: symmetric, authenticating: Data(aad))
        } catch {
            throw CryptoFailure.authentication
        }
        return try opened.withUnsafeBytes { try body($0) }
#elseif canImport(CCrypto)
        let output = reserve(ciphertext.count)
        let context = try self.context ?? GCMContexts.borrow(key: key, encrypt: false)
        self.context = nil  // kept again only after a message that opened
        guard let length = LibcryptoGCM.open(context, nonce: nonce, aad: aad, ciphertext: ciphertext, tag: tag, into: output) else {
            throw CryptoFailure.authentication
        }
        self.context = context
        return try body(UnsafeRawBufferPointer(start: output, count: length))
#else
        throw CryptoFailure.unavailable
#endif
    }

#if !canImport(CryptoKit) && canImport(CCrypto)
    /// The plaintext buffer, grown to at least `count` bytes (at least 1: a pointer for an empty message).
    private func reserve(_ count: Int) -> UnsafeMutableRawPointer {
        if let buffer, capacity >= count { return buffer }
        buffer?.deallocate()
        capacity = max(count, 256)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        buffer = grown
        return grown
    }

    deinit {
        if let context { GCMContexts.giveBack(context, reusable: true) }
        buffer?.deallocate()
    }
#endif
}
