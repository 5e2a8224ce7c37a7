/// The rules for a device's name, the same for `nimbus token issue`, `nimbus device pair` and
/// `POST /devices/enroll`: 1–255 characters, no line breaks, no NUL or other control characters.
package enum DeviceName {
    package static let maxLength = 255

    /// nil when `name` is acceptable; else the reason, naming the field as `field`.
    package static func problem(_ name: String, field: String = "deviceName") -> String? {
        if name.isEmpty { return "\(field) is empty; name the device (1–255 characters)." }
        // Counted in Unicode scalars, as JSON Schema's maxLength counts (the OpenAPI document).
        let length = name.unicodeScalars.count
        if length > maxLength { return "\(field) has \(length) characters; at most \(maxLength)." }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "\(field) contains a line break or another control character."
        }
        return nil
    }
}
