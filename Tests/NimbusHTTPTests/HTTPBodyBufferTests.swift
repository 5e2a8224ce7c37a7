@testable import NimbusHTTP
import Testing

/// The buffer a request body is read into: room for a body of known length up front (no copy to
/// a larger buffer when it arrives in several 64 KiB reads), never more than `reservedBodyBytes`.
@Suite struct HTTPBodyBufferTests {
    @Test func aKnownLengthIsReservedUpToTheCap() {
        #expect(HTTPConnection.bodyBuffer(for: .length(100_000), limit: 8 << 20).capacity >= 100_000)
        let cap = HTTPConnection.reservedBodyBytes
        #expect(HTTPConnection.bodyBuffer(for: .length(cap), limit: 8 << 20).capacity >= cap)
        // Past the cap: the cap, not the announced length.
        let large = HTTPConnection.bodyBuffer(for: .length(4 << 20), limit: 8 << 20)
        #expect(large.capacity >= cap && large.capacity < 2 * cap)
    }

    @Test func nothingIsReservedWithoutAKnownLengthWithinTheLimit() {
        #expect(HTTPConnection.bodyBuffer(for: .chunked, limit: 8 << 20).capacity == 0)
        #expect(HTTPConnection.bodyBuffer(for: .none, limit: 8 << 20).capacity == 0)
        #expect(HTTPConnection.bodyBuffer(for: .length(0), limit: 8 << 20).capacity == 0)
        // A length over the limit is refused (413) before any body is read.
        #expect(HTTPConnection.bodyBuffer(for: .length(9 << 20), limit: 8 << 20).capacity == 0)
    }
}
