import NimbusPush
import NimbusSupport

/// One operator's server the relay accepts pushes from. What the relay keeps of it: the name, the
/// public id, the signing key derived from the secret (never the secret), and when it was added and
/// revoked. A revoked installation keeps its row (so `list` shows it) without its key.
package struct Installation: Sendable, Equatable {
    package var name: String
    package var id: String
    /// Empty once revoked.
    package var signingKey: [UInt8]
    package var createdAt: Int64
    package var revokedAt: Int64?

    package init(name: String, id: String, signingKey: [UInt8], createdAt: Int64, revokedAt: Int64? = nil) {
        self.name = name
        self.id = id
        self.signingKey = signingKey
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    package var isRevoked: Bool { revokedAt != nil }

    var json: JSONValue {
        var object: JSONObject = ["name": .string(name), "id": .string(id), "signingKey": .string(Base64URL.encode(signingKey)),
                                  "createdAt": .integer(createdAt)]
        if let revokedAt { object["revokedAt"] = .integer(revokedAt) }
        return .object(object)
    }

    init?(json: JSONValue) {
        guard let object = json.objectValue, let name = object["name"]?.stringValue, let id = object["id"]?.stringValue,
              let key = object["signingKey"]?.stringValue.flatMap({ Base64URL.decode($0) }), let createdAt = object["createdAt"]?.int64Value,
              RelayCredentials.isName(name), RelayCredentials.isInstallationID(id) else { return nil }
        let revokedAt = object["revokedAt"]?.int64Value
        guard revokedAt != nil ? key.isEmpty : key.count == 32 else { return nil }
        self.init(name: name, id: id, signingKey: key, createdAt: createdAt, revokedAt: revokedAt)
    }
}
