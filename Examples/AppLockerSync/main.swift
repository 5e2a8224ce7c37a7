import Foundation
import NimbusKitCK

// AppLockerSync: AppLocker's CloudKitManager (CloudKitManager.swift, the app's own code with only
// its import changed and its prune removed) running on NimbusKitCK, played as the Mac or the
// phone from the command line. Configured by NIMBUS_URL, NIMBUS_TOKEN (and NIMBUS_ENVIRONMENT).
//
//   AppLockerSync mac publish-blocked APP BUNDLE-ID
//   AppLockerSync mac publish-failed APP BUNDLE-ID PHOTO-FILE
//   AppLockerSync mac sync-locked-apps JSON-FILE          (a JSON list of LockedAppInfo)
//   AppLockerSync phone fetch-blocked [LIMIT]             (one line per event, newest first)
//   AppLockerSync phone fetch-failed OUT-DIR              (writes each photo's bytes to OUT-DIR)
//   AppLockerSync phone fetch-locked-lists
//   AppLockerSync phone setup-subscriptions
//   AppLockerSync phone watch SECONDS                     (prints notifications with their alert title)
//   AppLockerSync phone register-push HEX-TOKEN [development|production]   (prints the server's push mode)
//   AppLockerSync phone unregister-push
//   AppLockerSync phone handle-push JSON-FILE             (a push's userInfo, as CKNotification reads it)

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// An APNs device token typed as hex.
func hexData(_ text: String) -> Data? {
    guard text.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
        bytes.append(byte)
        index = next
    }
    return Data(bytes)
}

func usage() -> Never {
    FileHandle.standardError.write(Data("usage: AppLockerSync mac|phone COMMAND [ARGUMENTS] (see main.swift)\n".utf8))
    exit(64)
}

@MainActor
func run(_ arguments: [String]) async throws {
    guard arguments.count >= 2 else { usage() }
    let manager = CloudKitManager.shared
    await manager.checkiCloudStatus()
    guard manager.iCloudAvailable else {
        throw CKError(NimbusError(.notAuthenticated, reason: "the server refused this device (check NIMBUS_URL and NIMBUS_TOKEN)"))
    }
    let rest = Array(arguments.dropFirst(2))
    switch (arguments[0], arguments[1]) {
    case ("mac", "publish-blocked"):
        guard rest.count == 2 else { usage() }
        manager.publishBlockedApp(appName: rest[0], bundleID: rest[1])
    case ("mac", "publish-failed"):
        guard rest.count == 3 else { usage() }
        manager.publishFailedAuth(appName: rest[0], bundleID: rest[1], encryptedPhotoURL: URL(fileURLWithPath: rest[2]))
    case ("mac", "sync-locked-apps"):
        guard rest.count == 1 else { usage() }
        let apps = try JSONDecoder().decode([LockedAppInfo].self, from: Data(contentsOf: URL(fileURLWithPath: rest[0])))
        manager.syncLockedAppList(apps)
    case ("phone", "fetch-blocked"):
        for record in try await manager.fetchBlockedEvents(limit: rest.first.flatMap(Int.init) ?? 100) {
            say("\(record["appName"] as? String ?? "?") \(record["bundleID"] as? String ?? "?") \(record.recordID.recordName)")
        }
    case ("phone", "fetch-failed"):
        guard rest.count == 1 else { usage() }
        for record in try await manager.fetchFailedAuthEvents() {
            guard let asset = record["photoAsset"] as? CKAsset, let file = asset.fileURL else {
                say("\(record.recordID.recordName) no-photo")
                continue
            }
            let target = URL(fileURLWithPath: rest[0]).appendingPathComponent(record.recordID.recordName)
            try Data(contentsOf: file).write(to: target)
            say("\(record.recordID.recordName) \(target.path)")
        }
    case ("phone", "fetch-locked-lists"):
        for record in try await manager.fetchLockedAppLists() {
            let apps = (record["apps"] as? CKAsset)?.fileURL.flatMap { try? Data(contentsOf: $0) }
                .flatMap { try? JSONDecoder().decode([LockedAppInfo].self, from: $0) } ?? []
            say("\(record.recordID.recordName) \(record["deviceName"] as? String ?? "?") apps=\(apps.map(\.bundleID).joined(separator: ","))")
        }
    case ("phone", "setup-subscriptions"):
        manager.setupPushSubscriptions()
    case ("phone", "watch"):
        guard let seconds = rest.first.flatMap(Double.init) else { usage() }
        let channel = try await CKContainer(identifier: "iCloud.com.mirxa.AppLocker").privateCloudDatabase.notifications()
        say("watching")
        let watcher = Task {
            for try await notification in channel {
                say("notification \(notification.subscriptionID) \(notification.alert?.title ?? "-") \(notification.recordID?.recordName ?? "-")")
            }
        }
        try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        watcher.cancel()
    case ("phone", "register-push"):
        guard let hex = rest.first, let token = hexData(hex),
              let environment = APNsEnvironment(rawValue: rest.count > 1 ? rest[1] : "development") else { usage() }
        let registration = try await AppLockerPush.register(deviceToken: token, environment: environment)
        say("push \(registration.push.rawValue) \(registration.apnsEnvironment.rawValue) \(registration.apnsToken)")
    case ("phone", "unregister-push"):
        say("unregistered \(try await AppLockerPush.container.unregisterForRemoteNotifications())")
    case ("phone", "handle-push"):
        guard rest.count == 1, let userInfo = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: rest[0]))) as? [String: Any] else { usage() }
        say(AppLockerPush.describe(userInfo))
    default:
        usage()
    }
    // The manager's saves run in the background with completion handlers, as on CloudKit.
    await NimbusCK.waitForPendingOperations()
}

do {
    try await run(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("AppLockerSync: \(error)\n".utf8))
    exit(1)
}
