import Foundation
#if !canImport(SwiftData)
import NimbusKit

// MaccySync: Maccy's history on NimbusKit as one device. NIMBUS_URL / NIMBUS_TOKEN pick the server
// and device; MACCY_DIR holds its store and engine state; MACCY_KEY_FILE its account key.
//
//   MaccySync mac add TEXT [APP]          a copy (the same text again counts a copy)
//   MaccySync mac add-images DIR [APP]    every file of DIR as an image item titled with its name
//   MaccySync mac pin TITLE KEY | unpin TITLE | delete TITLE | clear | clear-all
//   MaccySync mac pair NAME               a pairing URL for a new device, the account key in its fragment
//   MaccySync ROLE enroll URL NAME        this device joins with that URL (token and key kept in MACCY_DIR)
//   MaccySync ROLE sync                   fetch, send what is pending (writes above only save locally)
//   MaccySync mac send                    send without fetching first (as live mode does after a save)
//   MaccySync ROLE list | search QUERY    "title pin" per item (search: pinned first)
//   MaccySync ROLE dump                   every item and content, canonical (to compare replicas)
//   MaccySync ROLE export DIR             each image item's bytes into DIR/TITLE
//   MaccySync ROLE watch SECONDS TITLE    live mode until an item TITLE arrives (prints "arrived")
// ROLE is mac or iphone; the iPhone's copy is read-only (Maccy's iOS app only views and copies).

func usage() -> Never {
    FileHandle.standardError.write(Data("usage: MaccySync mac|iphone COMMAND … (see main.swift)\n".utf8))
    exit(64)
}

/// FNV-1a 64 of a value: enough to compare replicas (byte equality with the originals: `export`).
func digest(_ data: Data?) -> String {
    guard let data else { return "-" }
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    data.withUnsafeBytes { bytes in
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    }
    return "\(data.count):" + String(hash, radix: 16)
}

func dumpLine(_ item: HistoryItem) -> String {
    let ms = { (d: Date) in String(Int64((d.timeIntervalSince1970 * 1000).rounded())) }
    let contents = item.contents.sorted { $0.recordName < $1.recordName }.map { "\($0.recordName)=\($0.type)=\(digest($0.value))" }
    return [item.recordName, item.title, item.pin ?? "-", item.application ?? "-", ms(item.firstCopiedAt), ms(item.lastCopiedAt),
            String(item.numberOfCopies), contents.joined(separator: ",")].joined(separator: "|")
}

func run(_ arguments: [String]) async throws {
    guard arguments.count >= 2, ["mac", "iphone"].contains(arguments[0]) else { usage() }
    let writable = arguments[0] == "mac"
    let directory = URL(fileURLWithPath: ProcessInfo.processInfo.environment["MACCY_DIR"] ?? FileManager.default.currentDirectoryPath)
    if arguments[1] == "enroll", arguments.count == 4, let url = URL(string: arguments[2]) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try await MaccyNimbus.enroll(pairingURL: url, deviceName: arguments[3], directory: directory)
        return
    }
    let storage = try Storage(directory: directory, writable: writable)
    let history = History(context: storage.context)
    let command = arguments[1], rest = Array(arguments.dropFirst(2))
    func item(_ title: String) throws -> HistoryItem {
        guard let found = history.items.first(where: { $0.title == title }) else {
            throw NimbusError(.unknownItem, reason: "no item titled \(title) on this device")
        }
        return found
    }
    if !writable, ["add", "add-images", "pin", "unpin", "delete", "clear", "clear-all"].contains(command) {
        throw NimbusError(.permissionFailure, reason: "the iPhone's history is read-only: \(command) runs on the Mac")
    }
    switch (command, rest.count) {
    case ("add", 1), ("add", 2):
        try await history.add(text: rest[0], application: rest.count > 1 ? rest[1] : nil)
    case ("add-images", 1), ("add-images", 2):
        let folder = URL(fileURLWithPath: rest[0])
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().map { folder.appendingPathComponent($0) }
        try await history.add(images: files, application: rest.count > 1 ? rest[1] : nil)
    case ("pin", 2):
        try await history.pin(try item(rest[0]), key: rest[1])
    case ("unpin", 1):
        try await history.pin(try item(rest[0]), key: nil)
    case ("delete", 1):
        try await history.delete(try item(rest[0]))
    case ("clear", 0):
        try await history.clear()
    case ("clear-all", 0):
        try await history.clearAll()
    case ("pair", 1):
        print(try await storage.container.pairNewDevice(deviceName: rest[0], handingOverKeys: true).pairingURL.absoluteString)
    case ("sync", 0):
        try await storage.sync.sync()
    case ("send", 0):
        try await storage.sync.send()
    case ("list", 0):
        for item in history.items.sorted(by: { $0.title < $1.title }) { print("\(item.title) \(item.pin ?? "-")") }
    case ("search", 1):
        for item in history.search(rest[0]) { print("\(item.title) \(item.pin ?? "-")") }
    case ("dump", 0):
        for item in history.items.sorted(by: { $0.recordName < $1.recordName }) { print(dumpLine(item)) }
    case ("export", 1):
        for item in history.items { if let data = item.imageData { try data.write(to: URL(fileURLWithPath: rest[0]).appendingPathComponent(item.title)) } }
    case ("watch", 2):
        guard let seconds = Double(rest[0]) else { usage() }
        let deadline = Date().addingTimeInterval(seconds)
        await storage.sync.engine.startLive(waitSeconds: 20)
        while Date() < deadline {
            if history.items.contains(where: { $0.title == rest[1] }) {
                print("arrived")
                return
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        print("timeout")
        exit(1)
    default:
        usage()
    }
}

do {
    try await run(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("MaccySync: \(error)\n".utf8))
    exit(1)
}
#else
// On Apple platforms Maccy itself is the program: Storage.swift and SwiftDataSync.swift go into the app.
print("MaccySync runs on Linux; on Apple platforms, Storage.swift and SwiftDataSync.swift are the app's.")
#endif
