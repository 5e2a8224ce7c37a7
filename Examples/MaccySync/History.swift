#if !canImport(SwiftData)
import Foundation

/// Maccy's history paths that change data — add (a copy; the same text again counts a copy),
/// delete, pin, clear (unpinned items) and clear all — and its search, over the store's context.
/// Each ends with `context.save()`, whose changes NimbusKit's engine sends.
final class History {
    let context: ModelContext

    init(context: ModelContext) { self.context = context }

    var items: [HistoryItem] { context.fetchItems() }

    @discardableResult
    func add(text: String, application: String?) async throws -> HistoryItem {
        let data = Data(text.utf8)
        if let existing = items.first(where: { $0.text == text }) {
            existing.numberOfCopies += 1
            existing.lastCopiedAt = Date()
            try await context.save()
            return existing
        }
        let item = HistoryItem(contents: [HistoryItemContent(type: HistoryItem.stringType, value: data)])
        item.application = application
        item.title = text
        context.insert(item)
        try await context.save()
        return item
    }

    /// Adds each file as an image item (titled with its name), one save for all.
    func add(images files: [URL], application: String?) async throws {
        for file in files {
            let item = HistoryItem(contents: [HistoryItemContent(type: "public.png", value: try Data(contentsOf: file))])
            item.application = application
            item.title = file.lastPathComponent
            context.insert(item)
        }
        try await context.save()
    }

    func delete(_ item: HistoryItem) async throws {
        context.delete(item)
        try await context.save()
    }

    func pin(_ item: HistoryItem, key: String?) async throws {
        item.pin = key
        try await context.save()
    }

    /// Maccy's "Clear": every item but the pinned ones.
    func clear() async throws {
        for item in items where item.pin == nil { context.delete(item) }
        try await context.save()
    }

    func clearAll() async throws {
        for item in items { context.delete(item) }
        try await context.save()
    }

    /// Maccy's exact search: titles containing the query, case-insensitively; pinned items first.
    func search(_ query: String) -> [HistoryItem] {
        let found = query.isEmpty ? items : items.filter { $0.title.range(of: query, options: .caseInsensitive) != nil }
        return found.filter { $0.pin != nil } + found.filter { $0.pin == nil }
    }
}
#endif
