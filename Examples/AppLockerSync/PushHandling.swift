import Foundation
import NimbusKitCK

// How AppLocker's phone wakes for "someone failed to unlock your Mac" when the Nimbus server has
// push on (docs/client.md "Push"). The registration and the payload handling are plain code that
// runs everywhere (main.swift's `register-push` / `handle-push` drive them on Linux); the
// UIApplicationDelegate glue that calls them exists only on iOS.
enum AppLockerPush {
    static let container = CKContainer(identifier: "iCloud.com.mirxa.AppLocker")

    /// From `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
    static func register(deviceToken: Data, environment: APNsEnvironment) async throws -> PushRegistration {
        try await container.registerForRemoteNotifications(deviceToken: deviceToken, environment: environment)
    }

    /// From `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`: one line
    /// describing the push, as CloudKit code reads it.
    static func describe(_ userInfo: [AnyHashable: Any]) -> String {
        guard let notification = CKNotification(fromRemoteNotificationDictionary: userInfo) else { return "not-a-nimbus-push" }
        switch notification {
        case let query as CKQueryNotification:
            let app = query.recordFields?["appName"] as? String ?? "-"
            return "query \(query.subscriptionID ?? "-") \(query.queryNotificationReason) \(query.recordID?.recordName ?? "-") appName=\(app)"
        case let zone as CKRecordZoneNotification:
            return "zone \(zone.subscriptionID ?? "-") \(zone.recordZoneID?.zoneName ?? "-")"
        default:
            return "database \(notification.subscriptionID ?? "-")"
        }
    }
}

#if canImport(UIKit) && os(iOS)
import UIKit

/// The app delegate's three push entry points.
final class AppLockerPushDelegate: NSObject, UIApplicationDelegate {
    func application(_ application: UIApplication,
                     didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]? = nil) -> Bool {
        application.registerForRemoteNotifications()  // every launch: the token may change
        return true
    }

    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        #if DEBUG
        let environment = APNsEnvironment.development
        #else
        let environment = APNsEnvironment.production
        #endif
        Task { _ = try? await AppLockerPush.register(deviceToken: deviceToken, environment: environment) }
    }

    func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
                     fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void) {
        let line = AppLockerPush.describe(userInfo)
        print(line)
        completionHandler(line == "not-a-nimbus-push" ? .noData : .newData)
    }
}
#endif
