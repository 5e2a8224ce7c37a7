import Foundation

/// What a re-encryption pass did.
public struct ReencryptionReport: Sendable, Hashable {
    /// Records saved again under the newest key.
    public var resealed: Int = 0
    /// Records already under the newest key.
    public var current: Int = 0
    /// Records changed by another device meanwhile (`serverRecordChanged`): the next pass takes them.
    public var conflicts: Int = 0
    /// Records this device cannot open.
    public var unreadable: [UnreadableRecord] = []
}

extension Database {
    /// Moves a zone's encrypted fields onto the newest key, through the public API: every record
    /// of the zone is fetched (`records/changes` from no token) and each one sealed with an older
    /// key id is replaced under its change tag. Run it again until `conflicts` is 0; it converges
    /// when every device has the newest key (older ones still open what is left). Asset files keep
    /// the key they were sealed with (the ring keeps it).
    public func reencrypt(zone: ZoneID) async throws -> ReencryptionReport {
        var report = ReencryptionReport()
        guard let newest = try container.keyRing().newest else { throw EncryptionError.keyMissing(nil, keyID: nil).nimbusError }
        var token: SyncToken?
        while true {
            let page = try await changes(in: zone, since: token)
            report.unreadable += page.unreadable
            var stale: [RecordOperation] = []
            for record in page.modified {
                var resealed = record
                var needs = false
                for (key, value) in record.fields {
                    guard case .encrypted(var encrypted) = value, let sealed = encrypted.ciphertext,
                          let id = SealFormat.keyID(of: sealed), id < newest.id else { continue }
                    encrypted.ciphertext = nil
                    resealed.fields[key] = .encrypted(encrypted)
                    needs = true
                }
                if needs { stale.append(.replace(resealed)) } else { report.current += 1 }
            }
            for result in try await modify(stale) {
                switch result {
                case .success: report.resealed += 1
                case .failure(let error) where error.code == .serverRecordChanged: report.conflicts += 1
                case .failure(let error): throw error
                }
            }
            token = page.syncToken
            if !page.moreComing { return report }
        }
    }
}
