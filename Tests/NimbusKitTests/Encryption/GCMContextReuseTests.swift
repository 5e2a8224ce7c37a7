#if !canImport(CryptoKit) && canImport(CCrypto)
import Foundation
import Testing
@testable import NimbusKit

/// libcrypto's AES-256-GCM with contexts kept per key and only the nonce set per message: the
/// answers stay the published ones in any order, a failed open never leaves its context for the
/// next message, and threads never share one.
@Suite("End-to-end encryption: reused GCM contexts")
struct GCMContextReuseTests {
    typealias Vector = (key: String, iv: String, plaintext: String, aad: String, ciphertext: String, tag: String)

    @Test func theSpecificationVectorsHoldInAnyOrderOnReusedContexts() throws {
        let vectors = EncryptionKnownAnswerTests.gcm
        for order in [Array(vectors), vectors.reversed(), Array(vectors) + vectors.reversed() + Array(vectors)] {
            for v in order {
                let sealed = try Primitives.seal(key: hex(v.key), nonce: hex(v.iv), plaintext: hex(v.plaintext), aad: hex(v.aad))
                #expect(sealed.hexString == v.ciphertext + v.tag)
                var flipped = sealed
                flipped[flipped.count - 1] ^= 1
                #expect(throws: CryptoFailure.authentication) { try Primitives.open(key: hex(v.key), nonce: hex(v.iv), sealed: flipped, aad: hex(v.aad)) }
                #expect(try Primitives.open(key: hex(v.key), nonce: hex(v.iv), sealed: sealed, aad: hex(v.aad)) == hex(v.plaintext))
            }
        }
    }

    @Test func aKeysContextIsSetUpOnceAndAFailedOpenDropsIt() throws {
        let key = Primitives.random(32), aad = Data("aad".utf8)
        var sealed: [(nonce: Data, box: Data, plaintext: Data)] = []
        for index in 0..<200 {
            let nonce = Primitives.random(12), plaintext = Data("field \(index)".utf8)
            sealed.append((nonce, try Primitives.seal(key: key, nonce: nonce, plaintext: plaintext, aad: aad), plaintext))
        }
        #expect(GCMContexts.idle(key: key, encrypt: true) == 1)
        for item in sealed { #expect(try Primitives.open(key: key, nonce: item.nonce, sealed: item.box, aad: aad) == item.plaintext) }
        #expect(GCMContexts.idle(key: key, encrypt: false) == 1)
        var changed = sealed[0].box
        changed[0] ^= 1
        #expect(throws: CryptoFailure.authentication) { try Primitives.open(key: key, nonce: sealed[0].nonce, sealed: changed, aad: aad) }
        #expect(GCMContexts.idle(key: key, encrypt: false) == 0)
        #expect(try Primitives.open(key: key, nonce: sealed[1].nonce, sealed: sealed[1].box, aad: aad) == sealed[1].plaintext)
        #expect(GCMContexts.idle(key: key, encrypt: false) == 1)
    }

    @Test func threadsOpeningUnderOneKeyEachGetTheirOwnContext() async throws {
        let key = Primitives.random(32), aad = Data("aad".utf8)
        let items = try (0..<64).map { index -> (Data, Data, Data) in
            let nonce = Primitives.random(12), plaintext = Data(repeating: UInt8(index), count: 100 + index)
            return (nonce, try Primitives.seal(key: key, nonce: nonce, plaintext: plaintext, aad: aad), plaintext)
        }
        let wrong = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for _ in 0..<20 {
                        for (nonce, box, plaintext) in items where (try? Primitives.open(key: key, nonce: nonce, sealed: box, aad: aad)) != plaintext {
                            wrong += 1
                        }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
        #expect(GCMContexts.idle(key: key, encrypt: false) <= GCMContexts.perKey)
    }
}
#endif
