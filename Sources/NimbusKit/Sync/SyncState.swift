import Foundation

/// Everything the engine must not forget: the outbox, parked failures, tokens and the
/// notification cursor. Kept on disk by `SyncJournal`; Codable as the single JSON document that
/// state files were before the journal (read once, to migrate them).
struct SyncState: Sendable, Codable, Equatable {
    var formatVersion = 1
    var outbox = Outbox()
    var failed: [FailedChange] = []
    var zoneTokens: [String: SyncToken] = [:]
    /// Zones the engine syncs (learned from `zones/changes` and from sent changes).
    var zones: [String] = []
    var databaseToken: SyncToken?
    var notificationCursor: NotificationCursor?
    /// Ids of the newest notifications handed to the app (by push or channel), so that one
    /// delivered both ways is shown once. Optional: state files of earlier versions lack it.
    var deliveredNotificationIDs: [String]?
    var lastSync: Date?
    var nextSequence: Int64 = 1
    /// Zone creates and deletes (journal item `zones`; not in the earlier one-document format).
    var zoneChanges = ZoneChanges()
    /// Record names the server has by zone, when the engine tracks them (SyncEngine+Known).
    var knownRecords: [String: Set<String>] = [:]
    /// Changes of `knownRecords` not yet in the journal.
    var knownDeltas: [KnownDelta] = []

    private enum CodingKeys: String, CodingKey {
        case formatVersion, outbox, failed, zoneTokens, zones, databaseToken, notificationCursor, deliveredNotificationIDs, lastSync,
             nextSequence
    }

    /// The tokens part: written when a fetch moves a token (journal item `tokens`).
    struct Tokens: Sendable, Codable, Equatable {
        var zoneTokens: [String: SyncToken]
        var zones: [String]
        var databaseToken: SyncToken?
        var lastSync: Date?
    }

    /// The notification channel's part (journal item `notifications`).
    struct Notifications: Sendable, Codable, Equatable {
        var cursor: NotificationCursor?
        var deliveredIDs: [String]?
    }

    var tokens: Tokens {
        get { Tokens(zoneTokens: zoneTokens, zones: zones, databaseToken: databaseToken, lastSync: lastSync) }
        set {
            zoneTokens = newValue.zoneTokens
            zones = newValue.zones
            databaseToken = newValue.databaseToken
            lastSync = newValue.lastSync
        }
    }

    var notifications: Notifications {
        get { Notifications(cursor: notificationCursor, deliveredIDs: deliveredNotificationIDs) }
        set {
            notificationCursor = newValue.cursor
            deliveredNotificationIDs = newValue.deliveredIDs
        }
    }
}
