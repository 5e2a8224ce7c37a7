import Foundation

/// The token and `moreComing` of a `records/changes` page read from its last bytes, before the
/// page is decoded, so that the engine can ask for the next page while it decodes, opens and
/// applies this one (the server writes them after `records`:
/// `…],"syncToken":"…","moreComing":true}`). Only a guess: the engine uses it when the decoded
/// page has the same token and `moreComing`, and asks again otherwise. Reads backwards over
/// trailing members whose values are `true`, `false` or a string without escapes; anything else
/// ends the look (nil when no token was seen).
enum ChangesContinuation {
    struct Guess: Equatable {
        var token: String
        var moreComing: Bool
    }

    static func guess(_ data: Data) -> Guess? {
        data.withUnsafeBytes { raw in guess(raw.bindMemory(to: UInt8.self)) }
    }

    static func guess(_ bytes: UnsafeBufferPointer<UInt8>) -> Guess? {
        var i = bytes.count - 1
        func skipSpace() { while i >= 0, isSpace(bytes[i]) { i -= 1 } }
        skipSpace()
        guard i >= 0, bytes[i] == UInt8(ascii: "}") else { return nil }
        i -= 1
        var token: String?
        var moreComing: Bool?
        // A few members at most: the ones after `records` in the server's order.
        for _ in 0..<4 {
            skipSpace()
            guard i >= 0 else { return nil }
            var text: Range<Int>?
            var flag: Bool?
            if bytes[i] == UInt8(ascii: "\"") {
                guard let range = stringBackwards(bytes, &i) else { return nil }
                text = range
            } else if let literal = boolBackwards(bytes, &i) {
                flag = literal
            } else {
                break  // `]`, `}`, a number: a member this look does not read
            }
            skipSpace()
            guard i >= 0, bytes[i] == UInt8(ascii: ":") else { return nil }
            i -= 1
            skipSpace()
            guard i >= 0, bytes[i] == UInt8(ascii: "\""), let key = stringBackwards(bytes, &i) else { return nil }
            if equal(bytes, key, "syncToken"), let text, token == nil {
                token = String(decoding: UnsafeBufferPointer(rebasing: bytes[text]), as: UTF8.self)
            } else if equal(bytes, key, "moreComing"), let flag, moreComing == nil {
                moreComing = flag
            }
            skipSpace()
            guard i >= 0, bytes[i] == UInt8(ascii: ",") else { break }
            i -= 1
        }
        guard let token else { return nil }
        return Guess(token: token, moreComing: moreComing ?? false)
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

    /// The inside of the string ending at `i` (its closing quote); `i` moves before its opening
    /// quote. Nil for a string with an escape (not read backwards).
    private static func stringBackwards(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Range<Int>? {
        let end = i
        i -= 1
        while i >= 0 {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\\") { return nil }
            if byte == UInt8(ascii: "\"") {
                if i > 0 && bytes[i - 1] == UInt8(ascii: "\\") { return nil }
                let range = (i + 1)..<end
                i -= 1
                return range
            }
            i -= 1
        }
        return nil
    }

    private static func boolBackwards(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Bool? {
        if endsWith(bytes, i, "true") { i -= 4; return true }
        if endsWith(bytes, i, "false") { i -= 5; return false }
        return nil
    }

    private static func endsWith(_ bytes: UnsafeBufferPointer<UInt8>, _ i: Int, _ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard i + 1 >= count else { return false }
        return word.withUTF8Buffer { $0.elementsEqual(bytes[(i + 1 - count)...i]) }
    }

    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ name: StaticString) -> Bool {
        name.withUTF8Buffer { $0.elementsEqual(bytes[range]) }
    }
}
