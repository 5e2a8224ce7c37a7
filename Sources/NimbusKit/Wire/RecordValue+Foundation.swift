import Foundation

extension RecordValue {
    /// The wire form as a Foundation tree, for `FieldPlaintext` (Crypto/) only, which seals
    /// `JSONSerialization`'s sorted output; every other path writes `wireJSON()`. Goes when that
    /// file moves to `wireJSON().serialized(sortedKeys: true)` (a later round: Crypto/ was being tuned).
    func wireField() -> [String: Any] {
        ["value": JSON.foundation(wireValue()), "type": fieldType.rawValue]
    }
}

extension JSON {
    /// A typed value as the Foundation tree `JSONSerialization` writes (and a push's `userInfo` holds).
    static func foundation(_ value: JSONValue) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let v): return v
        case .integer(let v): return NSNumber(value: v)
        case .double(let v): return NSNumber(value: v)
        case .string(let v): return v
        case .array(let values): return values.map(foundation)
        case .object(let object):
            var dictionary: [String: Any] = [:]
            for (key, member) in object { dictionary[key] = foundation(member) }
            return dictionary
        }
    }
}
