@testable import NimbusAPI
import NimbusCore
import NimbusStore
import Testing

/// `Authorization: Bearer <token>` read from the header's bytes.
@Suite struct RequestInputTests {
    @Test(arguments: ["Bearer abc", "bearer abc", "BEARER abc", "  Bearer   abc  ", "Bearer abc "])
    func aBearerHeaderGivesTheTokensDigest(header: String) throws {
        #expect(try RequestInput.bearerDigest(header) == AccountStore.tokenDigest("abc"))
    }

    @Test func theTokenIsHashedAsItIsWhateverItsBytes() throws {
        let token = "é-ü_" + String(repeating: "x", count: 100)
        #expect(try RequestInput.bearerDigest("Bearer " + token) == AccountStore.tokenDigest(token))
    }

    @Test(arguments: ["", " ", "Bearer", "Bearer ", "Bearer a b", "Basic abc", "Bearerx abc", "Bear abc", "Bearer\tabc", "abc"])
    func anythingElseIsRefusedWithTheExpectedShape(header: String) {
        #expect(throws: SyncError.self) { try RequestInput.bearerDigest(header) }
        do {
            _ = try RequestInput.bearerDigest(header)
        } catch {
            #expect(error.code == .authenticationFailed)
            #expect(error.reason.contains("Bearer <token>"))
        }
    }

    @Test func aMissingHeaderAsksForOne() {
        do {
            _ = try RequestInput.bearerDigest(nil, hint: " (see docs)")
            Issue.record("no error")
        } catch {
            #expect(error.code == .authenticationRequired)
            #expect(error.reason.hasSuffix("(see docs)."))
        }
    }
}
