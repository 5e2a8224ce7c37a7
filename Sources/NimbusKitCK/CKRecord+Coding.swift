import Foundation
import NimbusWire

/// `CKRecord` archived with `NSSecureCoding`: whole, or its system fields only.
extension CKRecord {
    // MARK: - System fields archived with NSSecureCoding

    static let systemFieldsKey = "NimbusRecordSystemFields"
    static let parentNameKey = "NimbusRecordParentName"
    static let parentZoneKey = "NimbusRecordParentZone"

    /// Archives the record's identity, type and change tag (not its fields), so that a record
    /// saved after a relaunch is an update of the server's copy rather than a create.
    public func encodeSystemFields(with coder: NSCoder) {
        var system = record
        system.fields = [:]
        guard let json = try? JSONEncoder().encode(system), case .object(var object)? = try? JSONValue.parse(json) else { return }
        object["serverFields"] = nil
        coder.encode(NSData(data: Data(JSONValue.object(object).serialized())), forKey: CKRecord.systemFieldsKey)
        encodeParent(with: coder)
    }

    private func encodeParent(with coder: NSCoder) {
        if let parent {
            coder.encode(NSString(string: parent.recordID.recordName), forKey: CKRecord.parentNameKey)
            coder.encode(NSString(string: parent.recordID.zoneID.zoneName), forKey: CKRecord.parentZoneKey)
        }
    }

    public static var supportsSecureCoding: Bool { true }
    static let recordKey = "NimbusRecord"

    /// Archives the whole record: identity, system fields and fields (an encrypted field's plaintext
    /// too, as the engine's journal keeps it: the archive stays on the device).
    public func encode(with coder: NSCoder) {
        coder.encodeJSON(record, forKey: CKRecord.recordKey)
        encodeParent(with: coder)
    }

    /// A record from an archive: `encode(with:)`'s (with its fields) or `encodeSystemFields(with:)`'s
    /// (no fields); either way the server's change tag, so a save is an update of the server's copy.
    public convenience init?(coder: NSCoder) {
        let record: Record
        if let whole = coder.decodeJSON(Record.self, forKey: CKRecord.recordKey) {
            record = whole
        } else {
            guard coder.containsValue(forKey: CKRecord.systemFieldsKey),
                  let data = coder.decodeObject(of: NSData.self, forKey: CKRecord.systemFieldsKey),
                  let system = try? JSONDecoder().decode(Record.self, from: Data(referencing: data)) else { return nil }
            record = system
        }
        self.init(record: record)
        // A missing key is a decoding failure on Linux's NSKeyedUnarchiver: ask first.
        if coder.containsValue(forKey: CKRecord.parentNameKey),
           let name = coder.decodeObject(of: NSString.self, forKey: CKRecord.parentNameKey) {
            let zone = coder.containsValue(forKey: CKRecord.parentZoneKey)
                ? coder.decodeObject(of: NSString.self, forKey: CKRecord.parentZoneKey).map { String(describing: $0) } : nil
            parent = Reference(recordID: ID(recordName: String(describing: name), zoneID: CKRecordZone.ID(zoneName: zone ?? "_defaultZone")),
                               action: .none)
        }
    }
}
