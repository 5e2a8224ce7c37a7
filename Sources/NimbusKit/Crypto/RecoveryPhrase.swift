import Foundation

/// The account keys written for a person to keep: groups of four Crockford base32 characters
/// (`7K2M-…`), holding every key version (4-byte id + 32 bytes each) and a 4-byte SHA-256
/// checksum, so a mistyped or missing character is caught, not turned into a wrong key.
/// Case, spaces, dashes and the look-alikes O/I/L do not matter when it is typed back.
public enum RecoveryPhrase {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    /// The phrase of a key ring.
    public static func export(_ ring: KeyRing) -> String {
        var payload = Data()
        for key in ring.keys {
            payload += Data([UInt8(key.id >> 24), UInt8((key.id >> 16) & 0xff), UInt8((key.id >> 8) & 0xff), UInt8(key.id & 0xff)])
            payload += key.bytes
        }
        let text = encode(payload + checksum(payload))
        return stride(from: 0, to: text.count, by: 4).map { start -> String in
            let from = text.index(text.startIndex, offsetBy: start)
            return String(text[from..<text.index(from, offsetBy: min(4, text.count - start))])
        }.joined(separator: "-")
    }

    /// The key ring a phrase holds; `invalidArguments` saying what is wrong when a character is
    /// not in the alphabet, the length is off or the checksum does not match (a typo).
    public static func `import`(_ phrase: String) throws -> KeyRing {
        let cleaned = phrase.uppercased().filter { !$0.isWhitespace && $0 != "-" }
            .map { c -> Character in c == "O" ? "0" : (c == "I" || c == "L") ? "1" : c }
        guard let bytes = decode(cleaned) else {
            throw NimbusError(.invalidArguments, reason: "The recovery phrase has a character that is not one of 0-9 A-Z (without I, L, O, U): check it.")
        }
        guard bytes.count >= 40, (bytes.count - 4) % 36 == 0 else {
            throw NimbusError(.invalidArguments, reason: "The recovery phrase is \(cleaned.count) characters, not a whole number of keys: a group is missing or extra.")
        }
        let payload = bytes.prefix(bytes.count - 4)
        // The last character carries padding bits the checksum does not cover: only the canonical
        // spelling (padding zero) is accepted, so a typo there is caught too.
        guard checksum(Data(payload)) == bytes.suffix(4), encode(bytes) == String(cleaned) else {
            throw NimbusError(.invalidArguments, reason: "The recovery phrase's checksum does not match: a character is mistyped. Check each group.")
        }
        var ring = KeyRing()
        for start in stride(from: payload.startIndex, to: payload.endIndex, by: 36) {
            let id = payload[start..<start + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            ring.add(try AccountKey(id: id, bytes: Data(payload[start + 4..<start + 36])))
        }
        return ring
    }

    static func checksum(_ payload: Data) -> Data {
        Data(base64Encoded: Checksum.of(payload))?.prefix(4) ?? Data()
    }

    static func encode(_ data: Data) -> String {
        var out = ""
        var buffer: UInt32 = 0
        var bits = 0
        for byte in data {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 31)])
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return out
    }

    static func decode(_ text: [Character]) -> Data? {
        var out = Data()
        var buffer: UInt32 = 0
        var bits = 0
        for c in text {
            guard let value = alphabet.firstIndex(of: c) else { return nil }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((buffer >> UInt32(bits)) & 0xff))
            }
        }
        return out
    }
}
