import Foundation

/// The account keys in a pairing URL's fragment: `#k=<id>.<base64url key>[,<id>.<base64url key>…]`.
/// A fragment is never part of an HTTP request: the server never sees it.
enum KeyFragment {
    static func encode(_ ring: KeyRing) -> String {
        "k=" + ring.keys.map { "\($0.id).\($0.base64URL)" }.joined(separator: ",")
    }

    /// The keys of a URL's fragment; nil when it has no `k=`.
    static func decode(_ url: URL) throws -> KeyRing? {
        guard let fragment = URLComponents(url: url, resolvingAgainstBaseURL: false)?.fragment else { return nil }
        guard let value = fragment.split(separator: "&").first(where: { $0.hasPrefix("k=") })?.dropFirst(2) else { return nil }
        var ring = KeyRing()
        for item in value.split(separator: ",") {
            let parts = item.split(separator: ".", maxSplits: 1).map(String.init)
            let id = parts.count == 2 ? UInt32(parts[0]) : 1
            guard let id, let bytes = Base64URL.decode(parts.last ?? "") else {
                throw NimbusError(.invalidArguments, reason: "The pairing URL's #k= fragment is not <id>.<base64url key>: scan the code again.")
            }
            ring.add(try AccountKey(id: id, bytes: bytes))
        }
        return ring
    }
}

extension PairingInvitation {
    /// The invitation with the account keys in its URL's fragment (`#k=`), for the QR code shown to
    /// the new device. The fragment never reaches the server.
    public func handingOver(_ ring: KeyRing) -> PairingInvitation {
        var invitation = self
        var components = URLComponents(url: pairingURL, resolvingAgainstBaseURL: false)
        components?.fragment = KeyFragment.encode(ring)
        invitation.pairingURL = components?.url ?? pairingURL
        return invitation
    }
}

extension Container {
    /// `pairNewDevice` whose URL carries this device's account keys in its fragment, so the new
    /// device reads encrypted data at once. Without a key store or keys: `encryptionKeyMissing`.
    public func pairNewDevice(deviceName: String? = nil, handingOverKeys: Bool) async throws -> PairingInvitation {
        let invitation = try await pairNewDevice(deviceName: deviceName)
        guard handingOverKeys else { return invitation }
        let ring = try keyRing()
        guard !ring.isEmpty else { throw EncryptionError.keyMissing(nil, keyID: nil).nimbusError }
        return invitation.handingOver(ring)
    }

    /// `enroll(pairingURL:…)` that also keeps the keys of the URL's `#k=` fragment in `keyStore`
    /// and gives the container that store. The fragment is read here, never sent.
    public static func enroll(pairingURL: URL, deviceName: String, identifier: String,
                              environment: NimbusConfiguration.Environment = .development,
                              credentials: any CredentialStore, keyStore: any KeyStore) async throws -> Container {
        let keys = try KeyFragment.decode(pairingURL)
        var withoutFragment = URLComponents(url: pairingURL, resolvingAgainstBaseURL: false)
        withoutFragment?.fragment = nil
        let container = try await enroll(pairingURL: withoutFragment?.url ?? pairingURL, deviceName: deviceName, identifier: identifier,
                                         environment: environment, credentials: credentials)
        if let keys { try keyStore.adopt(keys) }
        container.keyStore = keyStore
        return container
    }

    /// Restores the account keys from a recovery phrase into the container's key store (a typo is
    /// `invalidArguments`, and nothing is stored).
    public func importRecoveryPhrase(_ phrase: String) throws {
        guard let store = keyStore else {
            throw NimbusError(.invalidArguments, reason: "Set the container's keyStore before importing a recovery phrase.")
        }
        try store.adopt(try RecoveryPhrase.import(phrase))
        reloadKeys()
    }

    /// The recovery phrase of this device's account keys (every version).
    public func exportRecoveryPhrase() throws -> String {
        let ring = try keyRing()
        guard !ring.isEmpty else { throw EncryptionError.keyMissing(nil, keyID: nil).nimbusError }
        return RecoveryPhrase.export(ring)
    }
}
