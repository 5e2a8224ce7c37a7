import Foundation

/// Opens a sealed alert's encrypted fields with the device's key store (the notification service
/// extension shares it through the Keychain access group). Without the key, or when a field does
/// not open, it gives nil: the helper then shows the subscription's generic text, never garbage.
public struct KeyStorePushOpener: PushFieldOpener {
    public let containerIdentifier: String
    public let keyStore: any KeyStore

    public init(containerIdentifier: String, keyStore: any KeyStore) {
        self.containerIdentifier = containerIdentifier
        self.keyStore = keyStore
    }

    public func open(field: String, ciphertext: Data, of notification: RemoteNotification) throws -> RecordValue? {
        guard let id = notification.recordID, let type = notification.recordType else { return nil }
        let context = SealContext(container: containerIdentifier, zone: id.zoneID.zoneName, recordType: type,
                                  recordName: id.recordName, field: field)
        guard let keys = try? keyStore.load(), let bytes = try? SealFormat.openField(ciphertext, keys: keys, context: context) else { return nil }
        return try? FieldPlaintext.decode(bytes, context: context, zoneID: id.zoneID)
    }
}
