import Foundation

/// A locked app as AppLocker's Mac app lists it (the app's own model; its JSON list is the
/// `apps` asset of a `LockedAppList` record).
struct LockedAppInfo: Codable, Equatable {
    let bundleID: String
    let displayName: String
    let path: String
}
