/// A field's type as docs/api.md names it: a base type, or the `_LIST` form of one, plain or
/// encrypted (docs/api.md "Encrypted fields"). The wire's one vocabulary of type names: the
/// server types and checks fields by it, and NimbusKit maps its public `FieldType` to it. An encrypted field declares the type its plaintext
/// has, for clients; on the wire and in storage its values are all `ENCRYPTED_BYTES`
/// (`encryptedBytes`, which is also what a field first saved encrypted in development declares).
package struct FieldType: Sendable, Hashable, CustomStringConvertible {
    package enum Base: String, Sendable, CaseIterable {
        case string = "STRING"
        case int64 = "INT64"
        case double = "DOUBLE"
        case timestamp = "TIMESTAMP"
        case bytes = "BYTES"
        case reference = "REFERENCE"
        case assetID = "ASSETID"
    }

    package var base: Base
    package var isList: Bool
    /// Values are ciphertext the server cannot read: the declared type is the plaintext's.
    package var isEncrypted: Bool

    @inlinable package init(_ base: Base, isList: Bool = false, isEncrypted: Bool = false) {
        self.base = base
        self.isList = isList
        self.isEncrypted = isEncrypted
    }

    /// Parses `STRING`, `INT64_LIST`, ..., `ENCRYPTED_BYTES`; nil for anything else.
    package init?(name: String) {
        guard let type = Self.byName[name] else { return nil }
        self = type
    }

    /// The name values carry on the wire: `ENCRYPTED_BYTES` for an encrypted field, else the
    /// declared type's.
    package var name: String { isEncrypted ? Self.encryptedBytesName : declaredName }
    /// The declared type's name (an encrypted field's plaintext type), as schema files write it.
    package var declaredName: String { isList ? Self.listNames[base] ?? base.rawValue + "_LIST" : base.rawValue }
    /// The type of the values the field holds on the wire and in storage.
    package var wireType: FieldType { isEncrypted ? .encryptedBytes : self }
    /// The same type, plain.
    package var plain: FieldType { FieldType(base, isList: isList) }

    package static let encryptedBytesName = "ENCRYPTED_BYTES"
    // The constants and `quotedName` are inlinable: writers in other modules (NimbusCore's
    // fields writer, NimbusKit's) use them per field, as they did when this type was NimbusCore's.

    /// Every type by name: one lookup per field typed (a record of ten fields names ten types).
    private static let byName: [String: FieldType] = Dictionary(uniqueKeysWithValues: Base.allCases.flatMap { base in
        [(base.rawValue, FieldType(base)), (base.rawValue + "_LIST", FieldType(base, isList: true))]
    } + [(encryptedBytesName, encryptedBytes)])
    private static let listNames: [Base: String] = Dictionary(uniqueKeysWithValues: Base.allCases.map { ($0, $0.rawValue + "_LIST") })
    package var description: String { name }

    /// Every type a value may be sent as: each base type followed by its `_LIST` form, then
    /// `ENCRYPTED_BYTES` (which has no list form); `spellings` names them in order.
    package static let all: [FieldType] = Base.allCases.flatMap { [FieldType($0), FieldType($0, isList: true)] } + [encryptedBytes]
    /// Every type's name as a constant, in the order of `all`: request bytes are matched against
    /// them without making a string (`JSONScanner.string(among:)`).
    package static let spellings: [StaticString] = [
        "STRING", "STRING_LIST", "INT64", "INT64_LIST", "DOUBLE", "DOUBLE_LIST", "TIMESTAMP", "TIMESTAMP_LIST",
        "BYTES", "BYTES_LIST", "REFERENCE", "REFERENCE_LIST", "ASSETID", "ASSETID_LIST", "ENCRYPTED_BYTES",
    ]
    /// `all`'s names as strings, in the same order.
    package static let names: [String] = all.map(\.name)

    /// `name` as a JSON string constant, for writers of wire forms (no lookup, no allocation).
    @inlinable package var quotedName: StaticString {
        if isEncrypted { return #""ENCRYPTED_BYTES""# }
        return switch (base, isList) {
        case (.string, false): #""STRING""#
        case (.int64, false): #""INT64""#
        case (.double, false): #""DOUBLE""#
        case (.timestamp, false): #""TIMESTAMP""#
        case (.bytes, false): #""BYTES""#
        case (.reference, false): #""REFERENCE""#
        case (.assetID, false): #""ASSETID""#
        case (.string, true): #""STRING_LIST""#
        case (.int64, true): #""INT64_LIST""#
        case (.double, true): #""DOUBLE_LIST""#
        case (.timestamp, true): #""TIMESTAMP_LIST""#
        case (.bytes, true): #""BYTES_LIST""#
        case (.reference, true): #""REFERENCE_LIST""#
        case (.assetID, true): #""ASSETID_LIST""#
        }
    }

    @inlinable package var element: FieldType { FieldType(base) }

    @inlinable package static var string: FieldType { FieldType(.string) }
    @inlinable package static var int64: FieldType { FieldType(.int64) }
    @inlinable package static var double: FieldType { FieldType(.double) }
    @inlinable package static var timestamp: FieldType { FieldType(.timestamp) }
    @inlinable package static var bytes: FieldType { FieldType(.bytes) }
    @inlinable package static var reference: FieldType { FieldType(.reference) }
    @inlinable package static var assetID: FieldType { FieldType(.assetID) }
    /// An encrypted field's values, whatever the field declares.
    @inlinable package static var encryptedBytes: FieldType { FieldType(.bytes, isEncrypted: true) }
}
