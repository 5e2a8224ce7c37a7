import Testing
@testable import NimbusPostgres

/// The prepared-statement cache's key hashes a sample of the statement's bytes; equality still
/// compares all of them.
@Suite struct PreparedKeyTests {
    private func key(_ text: String, _ types: [UInt32] = [20, 25]) -> PGConnection.PreparedKey {
        PGConnection.PreparedKey(text: Array(text.utf8), types: types)
    }

    @Test func equalStatementsAreEqualAndHashAlikeAtEveryLength() {
        let long = String(repeating: "SELECT a, b FROM t WHERE x = $1 AND y = $2 ", count: 40)
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200, long.utf8.count] {
            let text = String(long.prefix(length))
            #expect(key(text) == key(text))
            #expect(key(text).hashValue == key(text).hashValue, "\(length) bytes")
        }
    }

    @Test func statementsDifferingInOneByteBetweenTheSampledWordsAreNotEqual() {
        let base = Array(String(repeating: "SELECT a, b FROM t WHERE x = $1 AND y = $2 ", count: 40).utf8)
        for position in [0, 5, 100, 777, base.count / 2, base.count - 9, base.count - 1] {
            var changed = base
            changed[position] = changed[position] == UInt8(ascii: "Z") ? UInt8(ascii: "Y") : UInt8(ascii: "Z")
            let left = PGConnection.PreparedKey(text: base, types: [20]), right = PGConnection.PreparedKey(text: changed, types: [20])
            #expect(left != right, "byte \(position)")
            #expect(Set([left, right]).count == 2)
        }
        #expect(key("SELECT $1", [20]) != key("SELECT $1", [25]), "the parameter types are part of the key")
        #expect(key("SELECT 1") != key("SELECT 12"))
    }
}
