#if !canImport(SwiftData)
import Foundation

/// Linux's stand-in for SwiftData's `ModelContext`, with the same shape for Maccy's code: `insert`,
/// `delete` (cascading to contents), `save()` and fetching items. Kept in one JSON file, large
/// values in files of their own (`.externalStorage`). `save()` reports what changed since the last
/// save, as `ModelContext.didSave` does; changes written by sync (`HistoryStore`) are not reported.
final class ModelContext: HistoryStore, @unchecked Sendable {
    // Safe: everything below is only touched under `lock`.
    private let lock = NSLock()
    private let fileURL: URL
    private let blobs: URL
    private var items: [String: HistoryItem] = [:]
    private var saved: [String: ItemFields] = [:]
    private var savedContents: Set<String> = []
    /// Called after a local save with the inserted or updated items and contents, and the deleted records.
    var didSave: (@Sendable (_ items: [String], _ contents: [String], _ deleted: [String]) async throws -> Void)?

    private struct Stored: Codable {
        var items: [ItemFields]
        var contents: [ContentFields]
    }

    init(directory: URL) {
        fileURL = directory.appendingPathComponent("history.json")
        blobs = directory.appendingPathComponent("values", isDirectory: true)
        try? FileManager.default.createDirectory(at: blobs, withIntermediateDirectories: true)
        guard let stored = try? JSONDecoder().decode(Stored.self, from: Data(contentsOf: fileURL)) else { return }
        for fields in stored.items { items[fields.recordName] = Self.make(fields) }
        for fields in stored.contents { attach(fields) }
        saved = items.mapValues(Self.fields)
        savedContents = Set(items.values.flatMap { $0.contents.map(\.recordName) })
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: - The app's side (ModelContext's shape)

    func insert(_ item: HistoryItem) { locked { items[item.recordName] = item } }

    func delete(_ item: HistoryItem) { locked { items[item.recordName] = nil } }

    /// The items, newest copy first (Maccy's default sort).
    func fetchItems() -> [HistoryItem] { locked { items.values.sorted { $0.lastCopiedAt > $1.lastCopiedAt } } }

    func save() async throws {
        let (changedItems, changedContents, deleted) = try locked { () -> ([String], [String], [String]) in
            let now = items.mapValues(Self.fields)
            let contentNames = Set(items.values.flatMap { $0.contents.map(\.recordName) })
            let changed = now.filter { saved[$0.key] != $0.value }.keys.sorted()
            let newContents = contentNames.subtracting(savedContents).sorted()
            let gone = Set(saved.keys).subtracting(now.keys).union(savedContents.subtracting(contentNames)).sorted()
            try write()
            saved = now
            savedContents = contentNames
            return (changed, newContents, gone)
        }
        guard !(changedItems.isEmpty && changedContents.isEmpty && deleted.isEmpty) else { return }
        try await didSave?(changedItems, changedContents, deleted)
    }

    // MARK: - HistoryStore (sync's side)

    func item(_ name: String) async -> ItemFields? { locked { items[name].map(Self.fields) } }
    func items() async -> [ItemFields] { locked { items.values.map(Self.fields) } }

    func content(_ name: String) async -> ContentFields? {
        locked { items.values.lazy.flatMap(\.contents).first { $0.recordName == name }.map(Self.fields) }
    }

    func contents(of itemName: String) async -> [ContentFields] { locked { items[itemName]?.contents.map(Self.fields) ?? [] } }

    func putItem(_ fields: ItemFields) async throws {
        try locked {
            if let item = items[fields.recordName] { Self.copy(fields, to: item) } else { items[fields.recordName] = Self.make(fields) }
            saved[fields.recordName] = fields
            try write()
        }
    }

    func putContent(_ fields: ContentFields, file: URL?) async throws {
        try locked {
            var stored = fields
            if let file {
                let target = blobs.appendingPathComponent(fields.recordName)
                _ = try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: file, to: target)
                stored.file = target
            }
            guard attach(stored) else { return }
            savedContents.insert(fields.recordName)
            try write()
        }
    }

    func removeItem(_ name: String) async throws {
        try locked {
            guard let item = items.removeValue(forKey: name) else { return }
            saved[name] = nil
            for content in item.contents { forgetContent(content) }
            try write()
        }
    }

    func removeContent(_ name: String) async throws {
        try locked {
            for item in items.values {
                guard let index = item.contents.firstIndex(where: { $0.recordName == name }) else { continue }
                forgetContent(item.contents.remove(at: index))
            }
            try write()
        }
    }

    // MARK: - Storage

    private func forgetContent(_ content: HistoryItemContent) {
        savedContents.remove(content.recordName)
        if let file = content.valueFile { try? FileManager.default.removeItem(at: file) }
    }

    /// Adds a content to its item (false when the item is not here: a content of a deleted item).
    @discardableResult
    private func attach(_ fields: ContentFields) -> Bool {
        guard let item = items[fields.itemName] else { return false }
        item.contents.removeAll { $0.recordName == fields.recordName }
        let content = HistoryItemContent(type: fields.type, value: fields.inline)
        content.recordName = fields.recordName
        content.valueFile = fields.file
        content.item = item
        item.contents.append(content)
        return true
    }

    private func write() throws {
        // Large values of new contents move to files of their own.
        for content in items.values.flatMap(\.contents) {
            guard let value = content.storedValue, value.count > HistoryRecords.inlineLimit else { continue }
            let target = blobs.appendingPathComponent(content.recordName)
            try value.write(to: target, options: .atomic)
            content.storedValue = nil
            content.valueFile = target
        }
        let stored = Stored(items: items.values.map(Self.fields), contents: items.values.flatMap { $0.contents.map(Self.fields) })
        try JSONEncoder().encode(stored).write(to: fileURL, options: .atomic)
    }

    private static func fields(_ item: HistoryItem) -> ItemFields {
        ItemFields(recordName: item.recordName, application: item.application, title: item.title, pin: item.pin,
                   firstCopiedAt: item.firstCopiedAt, lastCopiedAt: item.lastCopiedAt, numberOfCopies: item.numberOfCopies)
    }

    private static func fields(_ content: HistoryItemContent) -> ContentFields {
        ContentFields(recordName: content.recordName, itemName: content.item?.recordName ?? "", type: content.type,
                      inline: content.storedValue, file: content.valueFile)
    }

    private static func make(_ fields: ItemFields) -> HistoryItem {
        let item = HistoryItem()
        item.recordName = fields.recordName
        copy(fields, to: item)
        return item
    }

    private static func copy(_ fields: ItemFields, to item: HistoryItem) {
        item.application = fields.application
        item.title = fields.title
        item.pin = fields.pin
        item.firstCopiedAt = fields.firstCopiedAt
        item.lastCopiedAt = fields.lastCopiedAt
        item.numberOfCopies = fields.numberOfCopies
    }
}
#endif
