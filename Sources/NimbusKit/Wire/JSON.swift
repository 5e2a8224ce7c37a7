import Foundation
import NimbusWire

/// A JSON object of the wire (the shared `NimbusWire.JSONObject`: members in order, typed values).
typealias JSONObject = NimbusWire.JSONObject
/// A JSON value of the wire: the server's own type, so both ends read and write JSON one way.
typealias JSONValue = NimbusWire.JSONValue

/// Reading and writing the wire JSON through NimbusWire's parser and writer (integers and
/// fractions stay apart, which typed field values need).
enum JSON {
    static func encode(_ object: JSONObject) -> Data { Data(JSONValue.object(object).serialized()) }

    static func encode(_ value: JSONValue) -> Data { Data(value.serialized()) }

    static func decodeObject(_ data: Data) throws -> JSONObject {
        let value: JSONValue
        do {
            // Waiting answers start with heartbeat spaces: JSON whitespace, which the parser skips.
            value = try JSONValue.parse(data)
        } catch {
            throw bad("The server's answer is not JSON (\(data.count) bytes): \(preview(data))")
        }
        guard case .object(let object) = value else { throw bad("The server's answer is not a JSON object: \(preview(data))") }
        return object
    }

    static func bad(_ reason: String) -> NimbusError { NimbusError(.serverResponseBad, reason: reason) }

    static func preview(_ data: Data) -> String {
        let text = String(decoding: data.prefix(120), as: UTF8.self)
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// An integer, or a number with no fractional part within Int64's range (as the changes scanner reads it).
    static func int64(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let v)?: return v
        case .double(let v)?: return v.rounded() == v && abs(v) < 9.2e18 ? Int64(v) : nil
        default: return nil
        }
    }

    static func double(_ value: JSONValue?) -> Double? { value?.doubleValue }
    static func bool(_ value: JSONValue?) -> Bool? { value?.boolValue }
    static func string(_ value: JSONValue?) -> String? { value?.stringValue }
    static func object(_ value: JSONValue?) -> JSONObject? { value?.objectValue }
    static func array(_ value: JSONValue?) -> [JSONValue]? { value?.arrayValue }

    /// `{"zoneName": …}`
    static func zoneID(_ zone: ZoneID) -> JSONValue { .object([WireKey.zoneName.rawValue: .string(zone.zoneName)]) }

    static func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }

    /// A Foundation tree (`JSONSerialization`'s, or a push's `userInfo` as Apple hands it over) as a
    /// typed value; nil for anything JSON has no form for.
    static func value(foundation: Any) -> JSONValue? {
        switch foundation {
        case is NSNull: return .null
        case let v as String: return .string(v)
        case let v as NSNumber: return number(v)
        case let v as [Any]:
            var values: [JSONValue] = []
            for item in v {
                guard let value = value(foundation: item) else { return nil }
                values.append(value)
            }
            return .array(values)
        case let v as [AnyHashable: Any]:
            var object = JSONObject()
            for (key, item) in v {
                guard let key = key.base as? String, let value = value(foundation: item) else { return nil }
                object[key] = value
            }
            return .object(object)
        default: return nil
        }
    }

    /// Booleans, integers and fractions apart, as Foundation tells them (`NSNumber(1) as? Bool`
    /// succeeds, so the cast cannot).
    private static func number(_ number: NSNumber) -> JSONValue {
        let type = String(cString: number.objCType)
#if canImport(Darwin)
        if CFGetTypeID(number) == CFBooleanGetTypeID() { return .bool(number.boolValue) }
#else
        if type == "c" { return .bool(number.boolValue) }   // swift-corelibs-foundation's booleans (and Swift's Bool)
#endif
        if type == "d" || type == "f" { return .double(number.doubleValue) }
        if type == "Q" && number.uint64Value > UInt64(Int64.max) { return .double(number.doubleValue) }
        return .integer(number.int64Value)
    }
}
