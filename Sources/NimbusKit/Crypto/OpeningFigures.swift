import Foundation

extension Container {
    /// A `records/changes` page decoded and opened exactly as a fetch does it (`decodeChanges`),
    /// minus the network: how many records opened and how many did not. For `nimbus-sync
    /// bench-e2e-open`, which times it for plain and sealed pages in one process.
    package func decodeAndOpenChanges(_ page: Data, zone: ZoneID) throws -> (opened: Int, unreadable: Int) {
        let changes = try ChangesPageDecoder.decode(page, zone: zone, opening: PageOpening(self))
        return (changes.modified.count, changes.unreadable.count)
    }
}
