/// A field's type as docs/api.md names it: a base type, or the `_LIST` form of one.
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

    package init(_ base: Base, isList: Bool = false) {
        self.base = base
        self.isList = isList
    }

    /// Parses `STRING`, `INT64_LIST`, ...; nil for anything else.
    package init?(name: String) {
        guard let type = Self.byName[name] else { return nil }
        self = type
    }

    package var name: String { isList ? Self.listNames[base] ?? base.rawValue + "_LIST" : base.rawValue }

    /// Every type by name: one lookup per field typed (a record of ten fields names ten types).
    private static let byName: [String: FieldType] = Dictionary(uniqueKeysWithValues: Base.allCases.flatMap { base in
        [(base.rawValue, FieldType(base)), (base.rawValue + "_LIST", FieldType(base, isList: true))]
    })
    private static let listNames: [Base: String] = Dictionary(uniqueKeysWithValues: Base.allCases.map { ($0, $0.rawValue + "_LIST") })
    package var description: String { name }

    /// Every type, each base type followed by its `_LIST` form; `spellings` names them in order.
    package static let all: [FieldType] = Base.allCases.flatMap { [FieldType($0), FieldType($0, isList: true)] }
    /// Every type's name as a constant, in the order of `all`: request bytes are matched against
    /// them without making a string (`JSONScanner.string(among:)`).
    package static let spellings: [StaticString] = [
        "STRING", "STRING_LIST", "INT64", "INT64_LIST", "DOUBLE", "DOUBLE_LIST", "TIMESTAMP", "TIMESTAMP_LIST",
        "BYTES", "BYTES_LIST", "REFERENCE", "REFERENCE_LIST", "ASSETID", "ASSETID_LIST",
    ]
    /// `all`'s names as strings, in the same order.
    package static let names: [String] = all.map(\.name)

    /// `name` as a JSON string constant, for writers of wire forms (no lookup, no allocation).
    package var quotedName: StaticString {
        switch (base, isList) {
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
}
