import Foundation
import NimbusKit

/// A history item's fields, as the store keeps them and the record carries them.
struct ItemFields: Codable, Equatable, Sendable {
    var recordName: String
    var application: String?
    var title: String
    var pin: String?
    var firstCopiedAt: Date
    var lastCopiedAt: Date
    var numberOfCopies: Int
}

/// A content's fields: its value inline (small) or in a file (an image; sent as an encrypted asset).
struct ContentFields: Codable, Equatable, Sendable {
    var recordName: String
    var itemName: String
    var type: String
    var inline: Data?
    var file: URL?
}

/// What the sync delegate needs of local storage: SwiftData's `ModelContext` on Apple platforms
/// (SwiftDataSync.swift), the file-backed stand-in on Linux (FileModelContext.swift). Remote
/// changes written here are not reported back as local saves.
protocol HistoryStore: AnyObject, Sendable {
    func item(_ name: String) async -> ItemFields?
    func items() async -> [ItemFields]
    func content(_ name: String) async -> ContentFields?
    func contents(of itemName: String) async -> [ContentFields]
    func putItem(_ fields: ItemFields) async throws
    /// `file` is a downloaded file the store takes over (moves or copies).
    func putContent(_ fields: ContentFields, file: URL?) async throws
    /// Removes the item and its contents.
    func removeItem(_ name: String) async throws
    func removeContent(_ name: String) async throws
}

/// Maccy's records: `HistoryItem` (title encrypted) and `HistoryItemContent` (value encrypted;
/// an image as an encrypted asset), as deploy/schemas/maccy.json declares them.
enum HistoryRecords {
    static let zone = ZoneID("History")
    static let itemType = "HistoryItem"
    static let contentType = "HistoryItemContent"
    /// Values larger than this travel as an asset (a record stays small).
    static let inlineLimit = 64 * 1024

    /// Maccy's pin keys (the macOS app removes the ones bound to its own shortcuts).
    static let pinKeys = ["b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "r", "s", "t", "u", "x", "y"]

    static func id(_ name: String) -> RecordID { RecordID(recordName: name, zoneID: zone) }

    /// The record to send: the server's copy (its change tag) with the item's fields set.
    static func record(for item: ItemFields, server: Record?) -> Record {
        var record = server ?? Record(recordType: itemType, id: id(item.recordName))
        record.fields["application"] = item.application.map(RecordValue.string)
        record.encryptedValues["title"] = .string(item.title)
        record.fields["pin"] = item.pin.map(RecordValue.string)
        record.fields["firstCopiedAt"] = .date(item.firstCopiedAt)
        record.fields["lastCopiedAt"] = .date(item.lastCopiedAt)
        record.fields["numberOfCopies"] = .int64(Int64(item.numberOfCopies))
        return record
    }

    /// Contents never change after they are made: an existing server copy is sent as it is.
    static func record(for content: ContentFields, server: Record?) -> Record {
        if let server { return server }
        var record = Record(recordType: contentType, id: id(content.recordName))
        record.fields["type"] = .string(content.type)
        record.fields["item"] = .reference(Reference(recordID: id(content.itemName)))
        if let file = content.file {
            record.encryptedValues["asset"] = .asset(Asset(fileURL: file))
        } else if let inline = content.inline {
            record.encryptedValues["value"] = .bytes(inline)
        }
        return record
    }

    static func item(from record: Record) -> ItemFields {
        ItemFields(recordName: record.recordName,
                   application: record.fields["application"]?.stringValue,
                   title: record.encryptedValues["title"]?.stringValue ?? "",
                   pin: record.fields["pin"]?.stringValue,
                   firstCopiedAt: record.fields["firstCopiedAt"]?.dateValue ?? Date(timeIntervalSince1970: 0),
                   lastCopiedAt: record.fields["lastCopiedAt"]?.dateValue ?? Date(timeIntervalSince1970: 0),
                   numberOfCopies: Int(record.fields["numberOfCopies"]?.int64Value ?? 1))
    }

    /// A content record's fields; an image's plaintext file is downloaded by the caller.
    static func content(from record: Record) -> ContentFields {
        ContentFields(recordName: record.recordName,
                      itemName: record.fields["item"]?.referenceValue?.recordID.recordName ?? "",
                      type: record.fields["type"]?.stringValue ?? "",
                      inline: record.encryptedValues["value"]?.bytesValue,
                      file: nil)
    }

    /// Maccy's merge of an item edited on two Macs: the copy count adds both sides' copies, the
    /// copy dates widen, and a pin set on both sides keeps the one that reached the server first
    /// (the second Mac's pin is taken back); any other field changed on one side takes that side.
    static func merge(base: Record?, local: Record, server: Record) -> [String: RecordValue] {
        var merged = threeWay(base: base?.fields ?? [:], local: local.fields, server: server.fields)
        guard local.recordType == itemType else { return merged }
        let count = { (r: Record?) in r?.fields["numberOfCopies"]?.int64Value }
        if let l = count(local), let s = count(server) {
            let b = count(base) ?? min(l, s)
            merged["numberOfCopies"] = RecordValue.int64(b + (l - b) + (s - b))
        }
        let dates = [local, server].compactMap { $0.fields["lastCopiedAt"]?.dateValue }
        if let latest = dates.max() { merged["lastCopiedAt"] = RecordValue.date(latest) }
        let firsts = [local, server].compactMap { $0.fields["firstCopiedAt"]?.dateValue }
        if let first = firsts.min() { merged["firstCopiedAt"] = RecordValue.date(first) }
        return merged
    }

    /// Field by field against the base: a field changed on one side takes that side's value; changed
    /// on both, the server's.
    static func threeWay(base: [String: RecordValue], local: [String: RecordValue], server: [String: RecordValue]) -> [String: RecordValue] {
        var merged: [String: RecordValue] = [:]
        for key in Set(base.keys).union(local.keys).union(server.keys) {
            let localChanged = !same(local[key], base[key]), serverChanged = !same(server[key], base[key])
            if let value = localChanged && !serverChanged ? local[key] : server[key] { merged[key] = value }
        }
        return merged
    }

    /// Equal values (timestamps travel in whole milliseconds).
    static func same(_ a: RecordValue?, _ b: RecordValue?) -> Bool {
        if let x = a?.dateValue, let y = b?.dateValue { return (x.timeIntervalSince1970 * 1000).rounded() == (y.timeIntervalSince1970 * 1000).rounded() }
        return a == b
    }

    /// Two items holding the same pin key (pinned on two Macs at once): the one with the smaller
    /// record name keeps it, the other gets the first free key. Returns the items to change.
    static func repinDuplicates(_ items: [ItemFields]) -> [ItemFields] {
        var used = Set(items.compactMap(\.pin))
        var byPin: [String: [ItemFields]] = [:]
        for item in items { if let pin = item.pin { byPin[pin, default: []].append(item) } }
        var changed: [ItemFields] = []
        for pin in byPin.keys.sorted() {
            guard let holders = byPin[pin], holders.count > 1 else { continue }
            for var loser in holders.sorted(by: { $0.recordName < $1.recordName }).dropFirst() {
                loser.pin = pinKeys.first { !used.contains($0) }
                if let pin = loser.pin { used.insert(pin) }
                changed.append(loser)
            }
        }
        return changed
    }
}
