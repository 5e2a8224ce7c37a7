import Foundation

extension CKContainer {
    /// The one call from `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`:
    /// registers the APNs token with the Nimbus server for this container's private database.
    /// `environment` is the app's `aps-environment` entitlement (`development` for builds run
    /// from Xcode, `production` for TestFlight and the App Store). A server with push off answers
    /// `push == .off`, which is not an error.
    public func registerForRemoteNotifications(deviceToken: Data, environment: APNsEnvironment) async throws -> PushRegistration {
        do { return try await privateCloudDatabase.nimbusDatabase().registerForPush(apnsToken: deviceToken, environment: environment) } catch {
            throw CKError(error)
        }
    }

    /// The completion-handler form of `registerForRemoteNotifications(deviceToken:environment:)`.
    public func registerForRemoteNotifications(deviceToken: Data, environment: APNsEnvironment,
                                               completionHandler: @escaping (PushRegistration?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.registerForRemoteNotifications(deviceToken: deviceToken, environment: environment) },
                          completionHandler)
    }

    /// Removes this device's push registration (signing out of push); true when there was one.
    @discardableResult
    public func unregisterForRemoteNotifications() async throws -> Bool {
        do { return try await privateCloudDatabase.nimbusDatabase().unregisterForPush() } catch { throw CKError(error) }
    }
}
