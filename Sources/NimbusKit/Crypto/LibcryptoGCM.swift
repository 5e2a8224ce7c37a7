#if !canImport(CryptoKit) && canImport(CCrypto)
import CCrypto
import Foundation

/// AES-256-GCM through libcrypto's EVP interface. Setting a key up (a new context, the cipher, the
/// key schedule) costs more than opening a small field, so a message borrows a context already set
/// up for its key from `GCMContexts` and sets only its nonce (`EVP_*Init_ex` with the IV alone,
/// which restarts GCM's counter, hash and tag under the same key).
enum LibcryptoGCM {
    static func run<AAD: ContiguousBytes>(encrypt: Bool, key: Data, nonce: Data, input: Data, aad: AAD, tag: Data?) throws -> Data {
        guard nonce.count == Primitives.nonceSize else { throw CryptoFailure.badInput }
        let context = try GCMContexts.borrow(key: key, encrypt: encrypt)
        var succeeded = false
        // A context goes back to the pool only after a message that went through: one left in an
        // unknown state (a failed tag check, an error) is freed.
        defer { GCMContexts.giveBack(context, reusable: succeeded) }
        let ctx = context.pointer
        var length: Int32 = 0
        let initialize = encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
        let update = encrypt ? EVP_EncryptUpdate : EVP_DecryptUpdate
        let started = nonce.withUnsafeBytes { n -> Bool in
            guard let iv = n.bindMemory(to: UInt8.self).baseAddress else { return false }
            return initialize(ctx, nil, nil, nil, iv) == 1
        }
        guard started else { throw CryptoFailure.unavailable }
        let aadOK = aad.withUnsafeBytes { a -> Bool in
            guard let base = a.bindMemory(to: UInt8.self).baseAddress, a.count > 0 else { return true }
            return update(ctx, nil, &length, base, Int32(a.count)) == 1
        }
        guard aadOK else { throw CryptoFailure.unavailable }
        // Written in place (no copies of a 64 KiB segment): the output, then (sealing) the tag.
        var output = Data(count: input.count + Primitives.tagSize)
        var total = 0
        let ok = output.withUnsafeMutableBytes { o -> Bool in
            guard let out = o.bindMemory(to: UInt8.self).baseAddress else { return false }
            let updated = input.withUnsafeBytes { i -> Bool in
                guard let base = i.bindMemory(to: UInt8.self).baseAddress, i.count > 0 else { return true }
                guard update(ctx, out, &length, base, Int32(i.count)) == 1 else { return false }
                total = Int(length)
                return true
            }
            guard updated else { return false }
            if encrypt {
                guard EVP_EncryptFinal_ex(ctx, out + total, &length) == 1 else { return false }
                total += Int(length)
                return EVP_CIPHER_CTX_ctrl(ctx, nimbus_EVP_CTRL_GCM_GET_TAG, Int32(Primitives.tagSize), out + total) == 1
            }
            guard let tag, tag.count == Primitives.tagSize else { return false }
            // SET_TAG copies the tag; it never writes through the pointer.
            let tagSet = tag.withUnsafeBytes { t -> Bool in
                guard let base = t.baseAddress else { return false }
                return EVP_CIPHER_CTX_ctrl(ctx, nimbus_EVP_CTRL_GCM_SET_TAG, Int32(Primitives.tagSize), UnsafeMutableRawPointer(mutating: base)) == 1
            }
            guard tagSet, EVP_DecryptFinal_ex(ctx, out + total, &length) == 1 else { return false }
            total += Int(length)
            return true
        }
        guard ok else { throw encrypt ? CryptoFailure.unavailable : CryptoFailure.authentication }
        output.count = encrypt ? total + Primitives.tagSize : total
        succeeded = true
        return output
    }
}

extension LibcryptoGCM {
    /// Opens one message on a context set up for opening under its key (`GCMContext`): sets the
    /// nonce (which restarts GCM's counter, hash and tag), feeds the associated data, writes the
    /// plaintext to `output` (at least `ciphertext.count` bytes) and checks the tag. The
    /// plaintext's length, or nil when the tag does not match or libcrypto refused; after nil the
    /// context's state is unknown and it must not be used again. No allocation: a page's fields
    /// are opened one after another into one buffer (`OpeningKey`).
    static func open(_ context: GCMContext, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
                     ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> Int? {
        guard !context.slot.encrypt, nonce.count == Primitives.nonceSize, tag.count == Primitives.tagSize,
              let iv = nonce.bindMemory(to: UInt8.self).baseAddress,
              let tagBytes = tag.baseAddress else { return nil }
        let ctx = context.pointer
        var length: Int32 = 0
        guard EVP_DecryptInit_ex(ctx, nil, nil, nil, iv) == 1 else { return nil }
        if let base = aad.bindMemory(to: UInt8.self).baseAddress, aad.count > 0 {
            guard EVP_DecryptUpdate(ctx, nil, &length, base, Int32(aad.count)) == 1 else { return nil }
        }
        let out = output.assumingMemoryBound(to: UInt8.self)
        var total = 0
        if let base = ciphertext.bindMemory(to: UInt8.self).baseAddress, ciphertext.count > 0 {
            guard EVP_DecryptUpdate(ctx, out, &length, base, Int32(ciphertext.count)) == 1 else { return nil }
            total = Int(length)
        }
        // SET_TAG copies the tag; it never writes through the pointer.
        guard EVP_CIPHER_CTX_ctrl(ctx, nimbus_EVP_CTRL_GCM_SET_TAG, Int32(Primitives.tagSize), UnsafeMutableRawPointer(mutating: tagBytes)) == 1,
              EVP_DecryptFinal_ex(ctx, out + total, &length) == 1 else { return nil }
        return total + Int(length)
    }
}

/// Whether two byte strings are equal (memcmp; not constant-time: used for keys already in this
/// process, to find their cache entries, never to check a tag).
func sameBytes(_ a: Data, _ b: Data) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { pa in
        b.withUnsafeBytes { pb in
            guard let x = pa.baseAddress, let y = pb.baseAddress else { return true }
            return memcmp(x, y, pa.count) == 0
        }
    }
}

/// One EVP context set up with AES-256-GCM, a 12-byte IV length and its key, for sealing or for
/// opening. Freed (libcrypto wipes the key schedule) when dropped.
final class GCMContext {
    let pointer: OpaquePointer
    let slot: GCMContexts.Slot

    init(_ slot: GCMContexts.Slot) throws {
        guard slot.key.count == Primitives.keySize, let pointer = EVP_CIPHER_CTX_new() else { throw CryptoFailure.unavailable }
        self.pointer = pointer
        self.slot = slot
        let initialize = slot.encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
        let ready = slot.key.withUnsafeBytes { k -> Bool in
            guard let key = k.bindMemory(to: UInt8.self).baseAddress,
                  initialize(pointer, EVP_aes_256_gcm(), nil, nil, nil) == 1,
                  EVP_CIPHER_CTX_ctrl(pointer, nimbus_EVP_CTRL_GCM_SET_IVLEN, Int32(Primitives.nonceSize), nil) == 1 else { return false }
            return initialize(pointer, nil, nil, key, nil) == 1
        }
        guard ready else { throw CryptoFailure.unavailable }
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }
}

/// The idle contexts of recently used keys: each thread keeps the one it used last, the others wait
/// in a pool; each is used by one message at a time (borrowed, then given back), so threads never
/// share one. Bounded: at most `maxKeys` keys and `perKey` idle
/// contexts each (about one per thread opening under that key); past that, contexts are freed.
enum GCMContexts {
    struct Slot: Hashable {
        var key: Data
        var encrypt: Bool

        // Looked up once per message: the key's bytes compared and hashed directly (a key is
        // uniformly random, so its first 8 bytes hash it well).
        static func == (a: Slot, b: Slot) -> Bool { a.encrypt == b.encrypt && sameBytes(a.key, b.key) }

        func hash(into hasher: inout Hasher) {
            hasher.combine(encrypt)
            key.withUnsafeBytes { raw in
                var prefix: UInt64 = 0
                withUnsafeMutableBytes(of: &prefix) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw.prefix(8))) }
                hasher.combine(prefix)
            }
        }
    }

    static let maxKeys = 64
    static let perKey = 8

    private struct State {
        var idle: [Slot: [GCMContext]] = [:]
        var created = 0
    }

    private static let state = Locked(State())

    /// Contexts set up since the process started (tests: reuse keeps this flat).
    static var created: Int { state.withLock { $0.created } }

    /// The idle contexts of one key, the calling thread's own included (tests).
    static func idle(key: Data, encrypt: Bool) -> Int {
        let slot = Slot(key: key, encrypt: encrypt)
        let own = ThreadContext.current().context.map { $0.slot == slot ? 1 : 0 } ?? 0
        return own + state.withLock { $0.idle[slot]?.count ?? 0 }
    }

    static func borrow(key: Data, encrypt: Bool) throws -> GCMContext {
        // The calling thread's last context first: no lock, no lookup (a page opens under one key).
        let box = ThreadContext.current()
        if let context = box.context, context.slot.encrypt == encrypt, sameBytes(context.slot.key, key) {
            box.context = nil
            return context
        }
        let slot = Slot(key: key, encrypt: encrypt)
        if let context = state.withLock({ $0.idle[slot]?.popLast() }) { return context }
        let context = try GCMContext(slot)
        state.withLock { $0.created += 1 }
        return context
    }

    static func giveBack(_ context: GCMContext, reusable: Bool) {
        guard reusable else { return }
        let box = ThreadContext.current()
        let previous = box.context
        box.context = context
        guard let previous else { return }
        state.withLock { state in
            if state.idle[previous.slot] == nil, state.idle.count >= maxKeys,
               let other = state.idle.keys.first(where: { $0 != previous.slot }) {
                state.idle.removeValue(forKey: other)  // one other key's contexts freed
            }
            if state.idle[previous.slot, default: []].count < perKey { state.idle[previous.slot, default: []].append(previous) }
        }
    }
}

/// The context a thread used last, kept for its next message (one per thread, freed when the
/// thread ends). Only the thread itself reads or writes it.
final class ThreadContext {
    var context: GCMContext?

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { raw in
            if let raw { Unmanaged<ThreadContext>.fromOpaque(raw).release() }
        }
        return key
    }()

    static func current() -> ThreadContext {
        if let raw = pthread_getspecific(key) { return Unmanaged<ThreadContext>.fromOpaque(raw).takeUnretainedValue() }
        let box = ThreadContext()
        pthread_setspecific(key, Unmanaged.passRetained(box).toOpaque())
        return box
    }
}
#endif
