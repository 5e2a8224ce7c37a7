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
        if name.hasSuffix("_LIST"), let base = Base(rawValue: String(name.dropLast(5))) {
            self.init(base, isList: true)
        } else if let base = Base(rawValue: name) {
            self.init(base)
        } else {
            return nil
        }
    }

    package var name: String { isList ? base.rawValue + "_LIST" : base.rawValue }
    package var description: String { name }

    package var element: FieldType { FieldType(base) }

    package static let string = FieldType(.string)
    package static let int64 = FieldType(.int64)
    package static let double = FieldType(.double)
    package static let timestamp = FieldType(.timestamp)
    package static let bytes = FieldType(.bytes)
    package static let reference = FieldType(.reference)
    package static let assetID = FieldType(.assetID)
}
