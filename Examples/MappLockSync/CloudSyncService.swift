// Sources/MappLockCore/CloudSyncService.swift
import NimbusKitCK
import Foundation
#if canImport(Combine)
import Combine
#endif

public class CloudSyncService: ObservableObject {
    public static let shared = CloudSyncService()

    @Published public var syncStatus: SyncStatus = .idle
    @Published public var lastSyncDate: Date?

    private let container: CKContainer
    private let database: CKDatabase
    private var cancellables = Set<AnyCancellable>()

    private init() {
        container = CKContainer(identifier: "iCloud.com.mapplock.universal")
        database = container.privateCloudDatabase
        setupSubscriptions()
    }

    public func syncConfigurations() async throws {
        await MainActor.run {
            syncStatus = .syncing
        }

        do {
            // Fetch remote configurations
            let remoteConfigs = try await fetchRemoteConfigurations()

            // Merge with local configurations
            let mergedConfigs = try await mergeConfigurations(remoteConfigs)

            // Upload local changes
            try await uploadLocalChanges()

            await MainActor.run {
                syncStatus = .completed
                lastSyncDate = Date()
            }
        } catch {
            await MainActor.run {
                syncStatus = .failed(error)
            }
            throw error
        }
    }

    private func fetchRemoteConfigurations() async throws -> [SessionConfiguration] {
        let query = CKQuery(recordType: "SessionConfiguration", predicate: NSPredicate(value: true))
        let (records, _) = try await database.records(matching: query)

        return records.compactMap { _, result in
            try? SessionConfiguration.from(record: result.get())
        }
    }

    // MARK: - The stubs, filled with NimbusKit's engine (MappLockEngine.swift)

    private func mergeConfigurations(_ remoteConfigs: [SessionConfiguration]) async throws -> [SessionConfiguration] {
        // The later modifiedAt wins per configuration; local edits that are newer stay pending.
        return try MappLockEngine.shared.merge(remoteConfigs)
    }

    private func uploadLocalChanges() async throws {
        // Pending local edits go through the engine's durable outbox; a conflict keeps the later modifiedAt.
        try await MappLockEngine.shared.upload()
    }

    private func setupSubscriptions() {
        // A query subscription on SessionConfiguration; while the app runs its notifications arrive
        // through the notification channel and each one syncs.
        let database = self.database
        Task {
            let subscription = CKQuerySubscription(recordType: "SessionConfiguration", predicate: NSPredicate(value: true),
                                                   subscriptionID: "session-configurations",
                                                   options: [.firesOnRecordCreation, .firesOnRecordUpdate, .firesOnRecordDeletion])
            let info = CKSubscription.NotificationInfo()
            info.shouldSendContentAvailable = true
            subscription.notificationInfo = info
            do {
                _ = try await database.save(subscription)
                MappLockEngine.shared.subscriptionsReady()
                for try await _ in try await database.notifications() {
                    try? await self.syncConfigurations()
                    MappLockEngine.shared.noteWake()
                }
            } catch {
                print("subscriptions: \(error)")
            }
        }
    }
}

public enum SyncStatus: Equatable {
    case idle
    case syncing
    case completed
    case failed(Error)

    public static func == (lhs: SyncStatus, rhs: SyncStatus) -> Bool {
        switch (lhs, rhs) {
        case (.idle, .idle), (.syncing, .syncing), (.completed, .completed):
            return true
        case (.failed, .failed):
            return true
        default:
            return false
        }
    }
}
