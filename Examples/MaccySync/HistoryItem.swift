import Foundation
#if canImport(SwiftData)
import SwiftData

// Maccy's two models as the app has them (deploy/schemas/maccy.json lists their fields), plus one
// line each: `recordName`, the stable name of the item's record on every device (SwiftData's
// `persistentModelID` is local to one store).
@available(macOS 14, iOS 17, *)
@Model
class HistoryItem {
    var application: String?
    var firstCopiedAt: Date = Date.now
    var lastCopiedAt: Date = Date.now
    var numberOfCopies: Int = 1
    var pin: String?
    var title = ""
    var recordName = UUID().uuidString

    @Relationship(deleteRule: .cascade, inverse: \HistoryItemContent.item)
    var contents: [HistoryItemContent] = []

    init(contents: [HistoryItemContent] = []) {
        self.contents = contents
    }
}

@available(macOS 14, iOS 17, *)
@Model
class HistoryItemContent {
    var type: String = ""
    var value: Data?
    var recordName = UUID().uuidString

    @Relationship
    var item: HistoryItem?

    init(type: String, value: Data? = nil) {
        self.type = type
        self.value = value
    }
}
#else

// Linux has no SwiftData: the same two models as plain classes, kept by the file-backed
// `ModelContext` of FileModelContext.swift (large values in files, as `.externalStorage`).
final class HistoryItem {
    var application: String?
    var firstCopiedAt: Date = Date()
    var lastCopiedAt: Date = Date()
    var numberOfCopies: Int = 1
    var pin: String?
    var title = ""
    var recordName = UUID().uuidString

    var contents: [HistoryItemContent] = []

    init(contents: [HistoryItemContent] = []) {
        self.contents = contents
        for content in contents { content.item = self }
    }
}

final class HistoryItemContent {
    var type: String = ""
    /// Small values live in the store's file; large ones (images) in a file of their own.
    var storedValue: Data?
    var valueFile: URL?
    var value: Data? {
        get { storedValue ?? valueFile.flatMap { try? Data(contentsOf: $0) } }
        set { storedValue = newValue; valueFile = nil }
    }
    var recordName = UUID().uuidString

    weak var item: HistoryItem?

    init(type: String, value: Data? = nil) {
        self.type = type
        self.storedValue = value
    }
}
#endif

// The parts of Maccy's HistoryItem the example reads (its pasteboard types as plain strings).
@available(macOS 14, iOS 17, *)
extension HistoryItem {
    static let stringType = "public.utf8-plain-text"
    static let imageTypes = ["public.tiff", "public.png", "public.jpeg", "public.heic"]

    var text: String? {
        contents.first { $0.type == Self.stringType }?.value.flatMap { String(data: $0, encoding: .utf8) }
    }

    var imageData: Data? {
        contents.first { Self.imageTypes.contains($0.type) }?.value
    }
}
