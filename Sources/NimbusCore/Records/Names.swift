/// The naming rules of docs/api.md, in one place.
package enum Names {
    /// Record and zone names: 1–255 of letters, digits, `-`, `_`, `.`, `:` (ASCII).
    package static func isValidRecordName(_ name: String) -> Bool {
        isValid(name, maxLength: 255) { isASCIIAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":") }
    }

    package static func isValidZoneName(_ name: String) -> Bool { isValidRecordName(name) }

    /// Zone names starting with `_` are reserved; `_defaultZone` is the only one that exists.
    package static let defaultZone = "_defaultZone"

    /// Record type names: letter first, then letters, digits, `_`; at most 255.
    package static func isValidRecordType(_ name: String) -> Bool {
        guard let first = name.utf8.first, isASCIILetter(first) else { return false }
        return isValid(name, maxLength: 255) { isASCIIAlphanumeric($0) || $0 == UInt8(ascii: "_") }
    }

    /// Field names: 1–255, letter first, letters/digits/`_`.
    package static func isValidFieldName(_ name: String) -> Bool { isValidRecordType(name) }

    /// Container ids: letters, digits, `.`, `-`, `_`, at most 255, not only dots (`.` and `..` are
    /// path segments that URL normalisation removes: such a container could not be reached).
    package static func isValidContainer(_ name: String) -> Bool {
        isValid(name, maxLength: 255) { isASCIIAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
            && !name.utf8.allSatisfy { $0 == UInt8(ascii: ".") }
    }

    private static func isValid(_ name: String, maxLength: Int, _ allowed: (UInt8) -> Bool) -> Bool {
        // Over the contiguous bytes: the UTF-8 view's iteration cost ~30 instructions a byte, and
        // every field name of every record written is checked.
        var name = name
        return name.withUTF8 { bytes in
            guard !bytes.isEmpty, bytes.count <= maxLength else { return false }
            for byte in bytes where !allowed(byte) { return false }
            return true
        }
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
    }

    private static func isASCIIAlphanumeric(_ byte: UInt8) -> Bool {
        isASCIILetter(byte) || (byte >= 48 && byte <= 57)
    }

    /// A name quoted for error messages, shortened when long.
    package static func quoted(_ name: String) -> String {
        let shown = name.count > 80 ? String(name.prefix(80)) + "…" : name
        return "\"\(shown)\""
    }
}
