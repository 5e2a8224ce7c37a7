import Foundation

/// A decoded JSON object (`JSONSerialization`'s shape). Lives only inside one call: never stored.
typealias JSONObject = [String: Any]

/// Reading and writing the wire JSON. Foundation's `JSONSerialization` keeps integers and
/// fractions apart, which typed field values need.
enum JSON {
    static func encode(_ object: Any) throws -> Data {
        do {
            return try JSONSerialization.data(withJSONObject: object, options: [])
        } catch {
            throw NimbusError(.invalidArguments, reason: "The request could not be written as JSON: \(error)")
        }
    }

    static func decodeObject(_ data: Data) throws -> JSONObject {
        let value: Any
        do {
            // Waiting answers start with heartbeat spaces: JSON whitespace, which the parser skips.
            value = try JSONSerialization.jsonObject(with: data, options: [])
        } catch {
            throw bad("The server's answer is not JSON (\(data.count) bytes): \(preview(data))")
        }
        guard let object = value as? JSONObject else { throw bad("The server's answer is not a JSON object: \(preview(data))") }
        return object
    }

    static func bad(_ reason: String) -> NimbusError { NimbusError(.serverResponseBad, reason: reason) }

    static func preview(_ data: Data) -> String {
        let text = String(decoding: data.prefix(120), as: UTF8.self)
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func int64(_ value: Any?) -> Int64? {
        switch value {
        case let v as Int: return Int64(v)
        case let v as Int64: return v
        case let v as Double: return v.rounded() == v && abs(v) < 9.2e18 ? Int64(v) : nil
        case let v as NSNumber: return v.int64Value
        default: return nil
        }
    }

    static func double(_ value: Any?) -> Double? {
        switch value {
        case let v as Double: return v
        case let v as Int: return Double(v)
        case let v as Int64: return Double(v)
        case let v as NSNumber: return v.doubleValue
        default: return nil
        }
    }

    static func bool(_ value: Any?) -> Bool? {
        switch value {
        case let v as Bool: return v
        case let v as NSNumber: return v.boolValue
        default: return nil
        }
    }

    static func string(_ value: Any?) -> String? { value as? String }
    static func object(_ value: Any?) -> JSONObject? { value as? JSONObject }
    static func array(_ value: Any?) -> [Any]? { value as? [Any] }
}
