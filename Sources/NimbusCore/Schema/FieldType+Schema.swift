import NimbusSupport

/// What schemas add to the wire's field types (`FieldType` lives in NimbusWire).
extension FieldType {
    /// How schemas show it: `STRING`, or `STRING (encrypted)`.
    package var schemaName: String { isEncrypted ? declaredName + " (encrypted)" : declaredName }

    /// Whether an encrypted field may declare this plaintext type: every type but `REFERENCE`
    /// and `ASSETID` (the server follows references and keeps assets; an asset is encrypted by
    /// its bytes, docs/api.md "Encrypted fields").
    package var canBeEncrypted: Bool { base != .reference && base != .assetID }
}
