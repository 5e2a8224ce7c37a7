// The plan's model (seeds/000, "Configuration System"), as written there, and its AppIdentifier.
// Sources/MappLockCore/SessionConfiguration.swift
import Foundation

public struct SessionConfiguration: Codable, Identifiable {
    public let id: UUID
    public let name: String
    public let duration: TimeInterval
    public let kioskMode: KioskModeType
    public let blockedApps: [AppIdentifier]
    public let allowedApps: [AppIdentifier]
    public let blockedWebsites: [String]
    public let allowedWebsites: [String]
    public let restrictions: SystemRestrictions
    public let notifications: NotificationSettings
    public let createdAt: Date
    public let modifiedAt: Date

    public init(
        id: UUID = UUID(),
        name: String,
        duration: TimeInterval,
        kioskMode: KioskModeType = .guidedAccess,
        blockedApps: [AppIdentifier] = [],
        allowedApps: [AppIdentifier] = [],
        blockedWebsites: [String] = [],
        allowedWebsites: [String] = [],
        restrictions: SystemRestrictions = .default,
        notifications: NotificationSettings = .default
    ) {
        self.id = id
        self.name = name
        self.duration = duration
        self.kioskMode = kioskMode
        self.blockedApps = blockedApps
        self.allowedApps = allowedApps
        self.blockedWebsites = blockedWebsites
        self.allowedWebsites = allowedWebsites
        self.restrictions = restrictions
        self.notifications = notifications
        self.createdAt = Date()
        self.modifiedAt = Date()
    }
}

public enum KioskModeType: String, Codable, CaseIterable {
    case guidedAccess = "guided_access"
    case singleApp = "single_app"
    case autonomous = "autonomous"
    case custom = "custom"

    public var displayName: String {
        switch self {
        case .guidedAccess:
            return "Guided Access"
        case .singleApp:
            return "Single App Mode"
        case .autonomous:
            return "Autonomous Mode"
        case .custom:
            return "Custom Mode"
        }
    }

    public var description: String {
        switch self {
        case .guidedAccess:
            return "Built-in iOS accessibility feature for basic app locking"
        case .singleApp:
            return "Enterprise-grade permanent lock requiring MDM"
        case .autonomous:
            return "App-controlled kiosk mode with flexible restrictions"
        case .custom:
            return "Custom configuration with advanced restrictions"
        }
    }
}

public struct SystemRestrictions: Codable {
    public let disableScreenshots: Bool
    public let disableControlCenter: Bool
    public let disableNotificationCenter: Bool
    public let disableHomeIndicator: Bool
    public let disableKeyboardShortcuts: Bool
    public let disableVolumeButtons: Bool
    public let disableAutoLock: Bool

    public static let `default` = SystemRestrictions(
        disableScreenshots: true,
        disableControlCenter: true,
        disableNotificationCenter: true,
        disableHomeIndicator: false,
        disableKeyboardShortcuts: true,
        disableVolumeButtons: false,
        disableAutoLock: true
    )

    public init(
        disableScreenshots: Bool = true,
        disableControlCenter: Bool = true,
        disableNotificationCenter: Bool = true,
        disableHomeIndicator: Bool = false,
        disableKeyboardShortcuts: Bool = true,
        disableVolumeButtons: Bool = false,
        disableAutoLock: Bool = true
    ) {
        self.disableScreenshots = disableScreenshots
        self.disableControlCenter = disableControlCenter
        self.disableNotificationCenter = disableNotificationCenter
        self.disableHomeIndicator = disableHomeIndicator
        self.disableKeyboardShortcuts = disableKeyboardShortcuts
        self.disableVolumeButtons = disableVolumeButtons
        self.disableAutoLock = disableAutoLock
    }
}

public struct NotificationSettings: Codable {
    public let enableSessionAlerts: Bool
    public let enableBreakReminders: Bool
    public let reminderInterval: TimeInterval
    public let alertSounds: Bool
    public let vibrationPatterns: Bool

    public static let `default` = NotificationSettings(
        enableSessionAlerts: true,
        enableBreakReminders: true,
        reminderInterval: 900, // 15 minutes
        alertSounds: true,
        vibrationPatterns: true
    )

    public init(
        enableSessionAlerts: Bool = true,
        enableBreakReminders: Bool = true,
        reminderInterval: TimeInterval = 900,
        alertSounds: Bool = true,
        vibrationPatterns: Bool = true
    ) {
        self.enableSessionAlerts = enableSessionAlerts
        self.enableBreakReminders = enableBreakReminders
        self.reminderInterval = reminderInterval
        self.alertSounds = alertSounds
        self.vibrationPatterns = vibrationPatterns
    }
}

public struct AppIdentifier: Hashable, Codable {
    public let bundleId: String
    public let name: String

    public init(bundleId: String, name: String) {
        self.bundleId = bundleId
        self.name = name
    }
}
