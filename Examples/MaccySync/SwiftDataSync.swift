#if canImport(SwiftData)
import Foundation
import NimbusKit
import SwiftData

// The SwiftData adapter an app uses on Apple platforms (NOT compiled by this repository's Linux
// builds: docs/client.md, "Maccy", says what could not be checked). HistorySync (shared with the
// Linux run) is the engine's delegate; this file is its store over SwiftData and the observation
// of the app's saves.

/// Feeds NimbusKit's engine from Maccy's `ModelContext`: every save of the main context
/// (`ModelContext.didSave`) becomes enqueued record IDs and a send; fetched changes are written
/// through a context of their own, whose saves are not reported back as local ones.
@available(macOS 14, iOS 17, *)
@MainActor
final class SwiftDataSync {
    let sync: HistorySync
    private let store: SwiftDataHistoryStore
    private var observer: (any NSObjectProtocol)?
    /// Record names of the models the main context knows: a deleted model cannot be read any more.
    private var names: [PersistentIdentifier: String] = [:]

    init(container: ModelContainer, directory: URL) throws {
        #if os(macOS)
        let writable = true   // the Mac collects the clipboard
        #else
        let writable = false  // the iPhone only views and copies
        #endif
        store = SwiftDataHistoryStore(container: container, outgoing: directory.appendingPathComponent("Outgoing", isDirectory: true))
        sync = try HistorySync(database: try MaccyNimbus.container(directory: directory, createKey: writable).privateDatabase,
                               directory: directory, store: store, writable: writable)
        let main = container.mainContext
        for item in (try? main.fetch(FetchDescriptor<HistoryItem>())) ?? [] { remember(item) }
        observer = NotificationCenter.default.addObserver(forName: ModelContext.didSave, object: main, queue: .main) { [weak self] note in
            MainActor.assumeIsolated { self?.contextDidSave(note, in: main) }
        }
        let sync = self.sync
        Task {
            try? await sync.sync()
            await sync.engine.startLive()   // fetches as soon as anything changes (iOS: foreground only)
        }
    }

    private func remember(_ item: HistoryItem) {
        names[item.persistentModelID] = item.recordName
        for content in item.contents { names[content.persistentModelID] = content.recordName }
    }

    private func contextDidSave(_ note: Notification, in context: ModelContext) {
        func ids(_ key: ModelContext.NotificationKey) -> [PersistentIdentifier] {
            note.userInfo?[key.rawValue] as? [PersistentIdentifier] ?? []
        }
        var items: [String] = [], contents: [String] = [], deleted: [String] = []
        for id in ids(.insertedIdentifiers) + ids(.updatedIdentifiers) {
            if let item = context.model(for: id) as? HistoryItem {
                remember(item)
                items.append(item.recordName)
            } else if let content = context.model(for: id) as? HistoryItemContent {
                names[id] = content.recordName
                contents.append(content.recordName)
            }
        }
        for id in ids(.deletedIdentifiers) {
            if let name = names.removeValue(forKey: id) { deleted.append(name) }
        }
        let sync = self.sync
        Task {
            try await sync.storeDidSave(items: items, contents: contents, deleted: deleted)
            try await sync.sync()
        }
    }
}

/// HistorySync's store over SwiftData: a context of its own on the main actor.
@available(macOS 14, iOS 17, *)
final class SwiftDataHistoryStore: HistoryStore, @unchecked Sendable {
    // Safe: `context` is only touched on the main actor.
    private let context: ModelContext
    private let outgoing: URL

    @MainActor
    init(container: ModelContainer, outgoing: URL) {
        context = ModelContext(container)
        self.outgoing = outgoing
        try? FileManager.default.createDirectory(at: outgoing, withIntermediateDirectories: true)
    }

    @MainActor private func fetchItem(_ name: String) -> HistoryItem? {
        var descriptor = FetchDescriptor<HistoryItem>(predicate: #Predicate { $0.recordName == name })
        descriptor.fetchLimit = 1
        return try? context.fetch(descriptor).first
    }

    @MainActor private func fetchContent(_ name: String) -> HistoryItemContent? {
        var descriptor = FetchDescriptor<HistoryItemContent>(predicate: #Predicate { $0.recordName == name })
        descriptor.fetchLimit = 1
        return try? context.fetch(descriptor).first
    }

    @MainActor private static func fields(_ item: HistoryItem) -> ItemFields {
        ItemFields(recordName: item.recordName, application: item.application, title: item.title, pin: item.pin,
                   firstCopiedAt: item.firstCopiedAt, lastCopiedAt: item.lastCopiedAt, numberOfCopies: item.numberOfCopies)
    }

    /// A large value goes out as an asset file (kept until the next launch; the engine reads it at send time).
    @MainActor private func fields(_ content: HistoryItemContent) -> ContentFields {
        var fields = ContentFields(recordName: content.recordName, itemName: content.item?.recordName ?? "", type: content.type,
                                   inline: content.value, file: nil)
        if let value = content.value, value.count > HistoryRecords.inlineLimit {
            let file = outgoing.appendingPathComponent(content.recordName)
            if !FileManager.default.fileExists(atPath: file.path) { try? value.write(to: file, options: .atomic) }
            fields.inline = nil
            fields.file = file
        }
        return fields
    }

    func item(_ name: String) async -> ItemFields? { await MainActor.run { fetchItem(name).map(Self.fields) } }

    func items() async -> [ItemFields] {
        await MainActor.run { ((try? context.fetch(FetchDescriptor<HistoryItem>())) ?? []).map(Self.fields) }
    }

    func content(_ name: String) async -> ContentFields? { await MainActor.run { fetchContent(name).map(fields) } }

    func contents(of itemName: String) async -> [ContentFields] {
        await MainActor.run { fetchItem(itemName)?.contents.map(fields) ?? [] }
    }

    func putItem(_ fields: ItemFields) async throws {
        try await MainActor.run {
            let item = fetchItem(fields.recordName) ?? {
                let made = HistoryItem()
                made.recordName = fields.recordName
                context.insert(made)
                return made
            }()
            item.application = fields.application
            item.title = fields.title
            item.pin = fields.pin
            item.firstCopiedAt = fields.firstCopiedAt
            item.lastCopiedAt = fields.lastCopiedAt
            item.numberOfCopies = fields.numberOfCopies
            try context.save()
        }
    }

    func putContent(_ fields: ContentFields, file: URL?) async throws {
        let value = try fields.inline ?? file.map { try Data(contentsOf: $0) }
        try await MainActor.run {
            guard let item = fetchItem(fields.itemName), fetchContent(fields.recordName) == nil else { return }
            let content = HistoryItemContent(type: fields.type, value: value)
            content.recordName = fields.recordName
            context.insert(content)
            content.item = item
            try context.save()
        }
    }

    func removeItem(_ name: String) async throws {
        try await MainActor.run {
            guard let item = fetchItem(name) else { return }
            context.delete(item)   // the contents go with it (deleteRule: .cascade)
            try context.save()
        }
    }

    func removeContent(_ name: String) async throws {
        try await MainActor.run {
            guard let content = fetchContent(name) else { return }
            context.delete(content)
            try context.save()
        }
    }
}
#endif
