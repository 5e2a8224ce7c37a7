import Foundation

/// JSON coding of wire values through Foundation's serializer (sorted keys: stable output).
package enum JSON {
    package static func encode(_ object: Any) -> [UInt8] {
        guard JSONSerialization.isValidJSONObject(object),
              let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return Array("{}".utf8)
        }
        return Array(data)
    }
}
