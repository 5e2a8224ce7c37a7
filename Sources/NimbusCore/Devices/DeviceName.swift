/// The rules for a device's name, the same for `nimbus token issue`, `nimbus device pair` and
/// `POST /devices/enroll`: 1–255 characters, no line breaks, no NUL or other control characters,
/// and not the name of another of the user's live devices (the database's unique index decides).
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

    /// The refusal of a name one of the user's live tokens already has (the name is the device's
    /// identity: two devices with one name would never see each other's changes), the same for
    /// enrollment, `nimbus token issue` and the console.
    package static func inUse(_ name: String, field: String = "deviceName") -> SyncError {
        SyncError(.badRequest, "\(field) \(Names.quoted(name)) is already the name of one of this user's devices; "
            + "choose another, or revoke that device first.")
    }
}
