#if !canImport(SwiftData)
import Foundation
import NimbusKit

/// Linux's Storage: the same shape as the app's (Storage.swift, SwiftData), over the file-backed
/// `ModelContext`, with NimbusKit's engine fed by its saves.
final class Storage {
    let context: ModelContext
    let container: Container
    let sync: HistorySync

    /// `writable`: the Mac; the iPhone's copy only fetches.
    init(directory: URL, writable: Bool) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let context = ModelContext(directory: directory)
        let container = try MaccyNimbus.container(directory: directory, createKey: writable)
        let sync = try HistorySync(database: container.privateDatabase, directory: directory, store: context, writable: writable)
        context.didSave = { items, contents, deleted in try await sync.storeDidSave(items: items, contents: contents, deleted: deleted) }
        self.context = context
        self.container = container
        self.sync = sync
    }
}
#endif
