/// A field's type as docs/api.md names it: a base type, or the `_LIST` form of one, plain or
/// encrypted (docs/api.md "Encrypted fields"). An encrypted field declares the type its plaintext
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

    package init(_ base: Base, isList: Bool = false, isEncrypted: Bool = false) {
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
    /// How schemas show it: `STRING`, or `STRING (encrypted)`.
    package var schemaName: String { isEncrypted ? declaredName + " (encrypted)" : declaredName }
    /// The type of the values the field holds on the wire and in storage.
    package var wireType: FieldType { isEncrypted ? .encryptedBytes : self }
    /// The same type, plain.
    package var plain: FieldType { FieldType(base, isList: isList) }
    /// Whether an encrypted field may declare this plaintext type: every type but `REFERENCE`
    /// and `ASSETID` (the server follows references and keeps assets; an asset is encrypted by
    /// its bytes, docs/api.md "Encrypted fields").
    package var canBeEncrypted: Bool { base != .reference && base != .assetID }

    package static let encryptedBytesName = "ENCRYPTED_BYTES"

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
    package var quotedName: StaticString {
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

    package var element: FieldType { FieldType(base) }

    package static let string = FieldType(.string)
    package static let int64 = FieldType(.int64)
    package static let double = FieldType(.double)
    package static let timestamp = FieldType(.timestamp)
    package static let bytes = FieldType(.bytes)
    package static let reference = FieldType(.reference)
    package static let assetID = FieldType(.assetID)
    /// An encrypted field's values, whatever the field declares.
    package static let encryptedBytes = FieldType(.bytes, isEncrypted: true)
}
