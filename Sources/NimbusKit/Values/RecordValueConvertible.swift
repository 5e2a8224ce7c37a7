import Foundation

/// Swift values that are record values: `record["title"] = .init("x")` reads better as
/// `record.set("title", "x")`, and filters take them directly (`Filter.lessThan("timestamp", date)`).
public protocol RecordValueConvertible: Sendable {
    var recordValue: RecordValue { get }
}

extension RecordValue: RecordValueConvertible { public var recordValue: RecordValue { self } }
extension String: RecordValueConvertible { public var recordValue: RecordValue { .string(self) } }
extension Int: RecordValueConvertible { public var recordValue: RecordValue { .int64(Int64(self)) } }
extension Int64: RecordValueConvertible { public var recordValue: RecordValue { .int64(self) } }
extension Int32: RecordValueConvertible { public var recordValue: RecordValue { .int64(Int64(self)) } }
extension Bool: RecordValueConvertible { public var recordValue: RecordValue { .int64(self ? 1 : 0) } }
extension Double: RecordValueConvertible { public var recordValue: RecordValue { .double(self) } }
extension Float: RecordValueConvertible { public var recordValue: RecordValue { .double(Double(self)) } }
extension Date: RecordValueConvertible { public var recordValue: RecordValue { .date(self) } }
extension Data: RecordValueConvertible { public var recordValue: RecordValue { .bytes(self) } }
extension Reference: RecordValueConvertible { public var recordValue: RecordValue { .reference(self) } }
extension Asset: RecordValueConvertible { public var recordValue: RecordValue { .asset(self) } }

extension Array: RecordValueConvertible where Element: RecordValueConvertible {
    public var recordValue: RecordValue {
        let values = map(\.recordValue)
        // An empty list takes its element type from the Swift type.
        let elementType = values.first?.fieldType ?? Self.emptyElementType
        if values.contains(where: { $0.fieldType == .double }) && elementType == .int64 {
            return .list(values.map { .double($0.doubleValue ?? 0) }, elementType: .double)
        }
        return .list(values, elementType: elementType)
    }

    private static var emptyElementType: FieldType {
        switch Element.self {
        case is String.Type: return .string
        case is Double.Type, is Float.Type: return .double
        case is Date.Type: return .timestamp
        case is Data.Type: return .bytes
        case is Reference.Type: return .reference
        case is Asset.Type: return .asset
        default: return .int64
        }
    }
}

extension Record {
    /// Sets a field from a Swift value; `nil` removes it.
    public mutating func set(_ key: String, _ value: (any RecordValueConvertible)?) {
        fields[key] = value?.recordValue
    }
}
