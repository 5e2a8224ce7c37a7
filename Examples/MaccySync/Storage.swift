#if canImport(SwiftData)
import Foundation
import NimbusKit
import SwiftData

@available(macOS 14, iOS 17, *)
@MainActor
class Storage {
    static let shared = Storage()

    var container: ModelContainer
    var context: ModelContext { container.mainContext }
    /// NimbusKit's engine in place of SwiftData's CloudKit mirroring (SwiftDataSync.swift).
    var sync: SwiftDataSync?

    var size: String {
        guard let size = try? url.resourceValues(forKeys: [.fileSizeKey]).allValues.first?.value as? Int64, size > 1 else {
            return ""
        }
        return ByteCountFormatter().string(fromByteCount: size)
    }

    #if os(macOS)
    private let url = URL.applicationSupportDirectory.appending(path: "Maccy/Storage.sqlite")
    #else
    // iOS uses app's documents directory within app group for sharing
    private let url: URL = {
        // Use App Group container for potential widget/extension sharing
        if let containerURL = FileManager.default.containerURL(
            forSecurityApplicationGroupIdentifier: "group.org.p0deje.Maccy"
        ) {
            return containerURL.appending(path: "Storage.sqlite")
        }
        return URL.documentsDirectory.appending(path: "Storage.sqlite")
    }()
    #endif

    init() {
        // Configure for iCloud sync when enabled
        var config: ModelConfiguration

        #if DEBUG
        if CommandLine.arguments.contains("enable-testing") {
            config = ModelConfiguration(isStoredInMemoryOnly: true)
        } else {
            config = Self.createConfiguration(url: url)
        }
        #else
        config = Self.createConfiguration(url: url)
        #endif

        do {
            container = try ModelContainer(for: HistoryItem.self, configurations: config)
        } catch let error {
            fatalError("Cannot load database: \(error.localizedDescription).")
        }
        sync = try? SwiftDataSync(container: container, directory: url.deletingLastPathComponent())
    }

    private static func createConfiguration(url: URL) -> ModelConfiguration {
        // Enable CloudKit sync when user has opted in
        // Note: CloudKit sync requires additional entitlements setup
        #if os(macOS)
        return ModelConfiguration(url: url, cloudKitDatabase: .none)
        #else
        return ModelConfiguration(url: url, cloudKitDatabase: .none)
        #endif
    }
}
#endif
