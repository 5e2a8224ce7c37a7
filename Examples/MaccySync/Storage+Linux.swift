#if !canImport(SwiftData)
import Foundation
import NimbusKit

/// Linux's Storage: the same shape as the app's (Storage.swift, SwiftData), over the file-backed
/// `ModelContext`, with NimbusKit's engine fed by its saves.
final class Storage {
    let context: ModelContext
    let sync: HistorySync

    /// `writable`: the Mac; the iPhone's copy only fetches.
    init(directory: URL, writable: Bool) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let context = ModelContext(directory: directory)
        let sync = try HistorySync(database: try MaccyNimbus.database(directory: directory, createKey: writable), directory: directory,
                                   store: context, writable: writable)
        context.didSave = { items, contents, deleted in try await sync.storeDidSave(items: items, contents: contents, deleted: deleted) }
        self.context = context
        self.sync = sync
    }
}
#endif
