import Foundation

/// The last string one key of a page decoded, kept so that the same bytes again give the same
/// `String` (shared storage) instead of a new one: a page of `records/changes` repeats
/// `userRecordName`, `deviceID` and `recordType` on every record, and a 33-byte user name is a
/// heap allocation and a UTF-8 check each time (issue #28 item 8: 200,000 of each in a first sync).
struct RepeatedString {
    fileprivate var range: Range<Int> = 0..<0
    fileprivate var value: String?
}

extension JSONScanner {
    /// A string value as `stringValue` gives it, the `String` of `last` when the bytes are the same
    /// as the last ones it kept (unescaped strings only; an escaped one is decoded and not kept).
    mutating func stringValue(repeating last: inout RepeatedString) throws -> String? {
        guard try kind() == .string else { try skipValue(); return nil }
        let token = try stringTokenValue()
        guard !token.escaped else { return try decode(token) }
        if let value = last.value, sameBytes(token.range, last.range) { return value }
        let value = try decode(token)
        last = RepeatedString(range: token.range, value: value)
        return value
    }

    /// Whether the document's bytes in `a` and `b` are the same.
    private func sameBytes(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        guard a.count == b.count else { return false }
        return withBytes(a) { x in
            withBytes(b) { y in
                guard let p = x.baseAddress, let q = y.baseAddress else { return true }
                return memcmp(p, q, x.count) == 0
            }
        }
    }
}
