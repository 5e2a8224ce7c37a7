import Foundation

// Encrypted asset fields for NimbusKitCK. On the wire an encrypted asset is a plain ASSETID, so a
// reader must be told which asset fields are sealed (NimbusKit: `Container.encryptedAssetFields`).
// Every `CKContainer` of the process takes the declaration made here (or the environment's), so
// that fetched records expose such an asset under `encryptedValues` with `fileURL` the plaintext.

extension NimbusCK {
    private static let assetFields = Locked<[String: Set<String>]?>(nil)

    /// The environment variable that declares the encrypted asset fields when `configure(encryptedAssetFields:)`
    /// was not called: `Type.field` entries separated by commas, e.g. `"Photo.image,Album.photos"`.
    public static let encryptedAssetFieldsVariable = "NIMBUS_ENCRYPTED_ASSET_FIELDS"

    /// Declares the asset fields this app encrypts (record type → fields) for every `CKContainer`
    /// created afterwards, as `Container.encryptedAssetFields`: their files are sealed before upload
    /// and opened on every read (`encryptedValues["photo"]` is a `CKAsset` whose `fileURL` is the
    /// plaintext; a list is `[CKAsset]`). Every device of the app declares the same fields. Without
    /// it (or after `nil`), `NIMBUS_ENCRYPTED_ASSET_FIELDS` is read.
    public static func configure(encryptedAssetFields: [String: Set<String>]?) {
        assetFields.withLock { $0 = encryptedAssetFields }
    }

    /// `configure(_:)` and `configure(encryptedAssetFields:)` at once.
    public static func configure(_ configuration: NimbusConfiguration, encryptedAssetFields: [String: Set<String>]) {
        configure(configuration)
        configure(encryptedAssetFields: encryptedAssetFields)
    }

    /// The declared encrypted asset fields: the configured ones, else the environment's;
    /// `invalidArguments` naming the bad entry when the environment's do not parse.
    static func encryptedAssetFields() throws -> [String: Set<String>] {
        if let configured = assetFields.withLock({ $0 }) { return configured }
        guard let raw = getenv(encryptedAssetFieldsVariable) else { return [:] }
        return try encryptedAssetFields(parsing: String(cString: raw))
    }

    /// `NIMBUS_ENCRYPTED_ASSET_FIELDS` parsed strictly: comma-separated `Type.field` entries (spaces
    /// around an entry allowed), each name a letter first then letters, digits or `_` (docs/api.md).
    /// An empty value declares none; an empty or malformed entry is `invalidArguments` naming it.
    public static func encryptedAssetFields(parsing value: String) throws -> [String: Set<String>] {
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty else { return [:] }
        var fields: [String: Set<String>] = [:]
        for (index, entry) in value.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, isName(parts[0]), isName(parts[1]) else {
                throw CKError(NimbusError(.invalidArguments, reason: "\(encryptedAssetFieldsVariable) entry \(index + 1) "
                    + "\"\(trimmed)\" is not Type.field (a record type and an asset field, each a letter first, then letters, "
                    + "digits or _; entries separated by commas), e.g. \(encryptedAssetFieldsVariable)=\"Photo.image,Album.photos\"."))
            }
            fields[parts[0], default: []].insert(parts[1])
        }
        return fields
    }

    private static func isName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 255, isASCIILetter(first) else { return false }
        return name.unicodeScalars.allSatisfy { isASCIILetter($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    private static func isASCIILetter(_ scalar: Unicode.Scalar) -> Bool { ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) }

    /// Gives a container the process's declaration unless it has one of its own; the environment's
    /// parse error, if any, for the container's databases to throw on use.
    static func applyEncryptedAssetFields(to container: Container) -> CKError? {
        guard container.encryptedAssetFields.isEmpty else { return nil }
        do {
            let declared = try encryptedAssetFields()
            if !declared.isEmpty { container.encryptedAssetFields = declared }
            return nil
        } catch {
            return CKError(error)
        }
    }
}
