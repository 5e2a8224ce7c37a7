// Written in the style of Apple's CKSyncEngine sample app (an actor owning the app's data and the
// engine, persisting the engine's state serialization, merging serverRecordChanged in
// handleEvent), with only the import changed. Uses nothing but Apple's documented API.
import Foundation
import NimbusKitCK // was: import CloudKit

struct Contact: Codable {
    var id: String
    var name: String
    var value: String
    /// The record's system fields from encodeSystemFields(with:), so saves are updates.
    var lastKnownRecordData: Data?
}

struct AppData: Codable {
    var stateSerialization: CKSyncEngine.State.Serialization?
    var contacts: [String: Contact] = [:]
}

actor SyncedDatabase: CKSyncEngineDelegate {
    static let zoneID = CKRecordZone.ID(zoneName: "Contacts")
    static let recordType: CKRecord.RecordType = "Contact"

    let dataURL: URL
    let logURL: URL
    var appData: AppData
    var conflictsHandled = 0
    private var _syncEngine: CKSyncEngine?
    var syncEngine: CKSyncEngine {
        if _syncEngine == nil { initializeSyncEngine() }
        return _syncEngine!
    }
    let automaticallySync: Bool

    init(directory: URL, automaticallySync: Bool) {
        dataURL = directory.appendingPathComponent("appData.json")
        logURL = directory.appendingPathComponent("sent.log")
        self.automaticallySync = automaticallySync
        if let data = try? Data(contentsOf: dataURL), let decoded = try? JSONDecoder().decode(AppData.self, from: data) {
            appData = decoded
        } else {
            appData = AppData()
        }
    }

    private func initializeSyncEngine() {
        var configuration = CKSyncEngine.Configuration(database: CKContainer.default().privateCloudDatabase,
                                                       stateSerialization: appData.stateSerialization, delegate: self)
        configuration.automaticallySync = automaticallySync
        _syncEngine = CKSyncEngine(configuration)
    }

    func start() { _ = syncEngine }

    private func persistLocalData() {
        do { try JSONEncoder().encode(appData).write(to: dataURL, options: .atomic) } catch { print("could not save: \(error)") }
    }

    // MARK: CKSyncEngineDelegate

    func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async {
        switch event {
        case .stateUpdate(let event):
            appData.stateSerialization = event.stateSerialization
            persistLocalData()
        case .accountChange(let event):
            handleAccountChange(event)
        case .fetchedDatabaseChanges(let event):
            for deletion in event.deletions where deletion.zoneID.zoneName == SyncedDatabase.zoneID.zoneName {
                appData.contacts = [:]
            }
            persistLocalData()
        case .fetchedRecordZoneChanges(let event):
            handleFetchedRecordZoneChanges(event)
        case .sentRecordZoneChanges(let event):
            handleSentRecordZoneChanges(event)
        case .sentDatabaseChanges, .willFetchChanges, .willFetchRecordZoneChanges, .didFetchRecordZoneChanges, .didFetchChanges,
             .willSendChanges, .didSendChanges:
            break
        @unknown default:
            print("unknown event \(event)")
        }
    }

    func nextRecordZoneChangeBatch(_ context: CKSyncEngine.SendChangesContext, syncEngine: CKSyncEngine) async
        -> CKSyncEngine.RecordZoneChangeBatch? {
        let scope = context.options.scope
        let changes = syncEngine.state.pendingRecordZoneChanges.filter { scope.contains($0) }
        return await CKSyncEngine.RecordZoneChangeBatch(pendingChanges: changes) { recordID in
            if let contact = appData.contacts[recordID.recordName] {
                let record = self.record(for: contact)
                return record
            } else {
                syncEngine.state.remove(pendingRecordZoneChanges: [.saveRecord(recordID)])
                return nil
            }
        }
    }

    // MARK: Events

    func handleAccountChange(_ event: CKSyncEngine.Event.AccountChange) {
        switch event.changeType {
        case .signIn: break
        case .switchAccounts, .signOut:
            appData = AppData()
            persistLocalData()
        @unknown default: break
        }
    }

    func handleFetchedRecordZoneChanges(_ event: CKSyncEngine.Event.FetchedRecordZoneChanges) {
        for modification in event.modifications {
            let record = modification.record
            let id = record.recordID.recordName
            var contact = appData.contacts[id] ?? Contact(id: id, name: "", value: "")
            contact.name = record["name"] as? String ?? ""
            contact.value = record["value"] as? String ?? ""
            contact.lastKnownRecordData = SyncedDatabase.systemFields(of: record)
            appData.contacts[id] = contact
        }
        for deletion in event.deletions { appData.contacts[deletion.recordID.recordName] = nil }
        persistLocalData()
    }

    func handleSentRecordZoneChanges(_ event: CKSyncEngine.Event.SentRecordZoneChanges) {
        var newPendingRecordZoneChanges: [CKSyncEngine.PendingRecordZoneChange] = []
        var newPendingDatabaseChanges: [CKSyncEngine.PendingDatabaseChange] = []
        for savedRecord in event.savedRecords {
            let id = savedRecord.recordID.recordName
            appData.contacts[id]?.lastKnownRecordData = SyncedDatabase.systemFields(of: savedRecord)
            appendLog("saved \(id)")
        }
        for failedRecordSave in event.failedRecordSaves {
            let failedRecord = failedRecordSave.record
            let id = failedRecord.recordID.recordName
            switch failedRecordSave.error.code {
            case .serverRecordChanged:
                guard let serverRecord = failedRecordSave.error.serverRecord else { continue }
                // Keep our value, take the server's system fields (and its other fields).
                conflictsHandled += 1
                appendLog("conflict \(id) server=\(serverRecord["value"] as? String ?? "")")
                appData.contacts[id]?.lastKnownRecordData = SyncedDatabase.systemFields(of: serverRecord)
                if appData.contacts[id]?.name.isEmpty ?? false { appData.contacts[id]?.name = serverRecord["name"] as? String ?? "" }
                newPendingRecordZoneChanges.append(.saveRecord(failedRecord.recordID))
            case .zoneNotFound:
                newPendingDatabaseChanges.append(.saveZone(CKRecordZone(zoneID: failedRecord.recordID.zoneID)))
                newPendingRecordZoneChanges.append(.saveRecord(failedRecord.recordID))
                appData.contacts[id]?.lastKnownRecordData = nil
            case .unknownItem:
                newPendingRecordZoneChanges.append(.saveRecord(failedRecord.recordID))
                appData.contacts[id]?.lastKnownRecordData = nil
            case .networkFailure, .networkUnavailable, .zoneBusy, .serviceUnavailable, .notAuthenticated, .operationCancelled:
                break
            default:
                print("failed save of \(id): \(failedRecordSave.error)")
            }
        }
        for deletedID in event.deletedRecordIDs { appendLog("deleted \(deletedID.recordName)") }
        syncEngine.state.add(pendingDatabaseChanges: newPendingDatabaseChanges)
        syncEngine.state.add(pendingRecordZoneChanges: newPendingRecordZoneChanges)
        persistLocalData()
    }

    // MARK: Local edits

    func addContacts(_ names: [String], value: String) {
        for name in names {
            appData.contacts[name] = Contact(id: name, name: name, value: value)
        }
        persistLocalData()
        syncEngine.state.add(pendingRecordZoneChanges: names.map { .saveRecord(CKRecord.ID(recordName: $0, zoneID: SyncedDatabase.zoneID)) })
    }

    func setValue(_ value: String, of name: String) {
        appData.contacts[name]?.value = value
        persistLocalData()
        syncEngine.state.add(pendingRecordZoneChanges: [.saveRecord(CKRecord.ID(recordName: name, zoneID: SyncedDatabase.zoneID))])
    }

    func deleteContact(_ name: String) {
        appData.contacts[name] = nil
        persistLocalData()
        syncEngine.state.add(pendingRecordZoneChanges: [.deleteRecord(CKRecord.ID(recordName: name, zoneID: SyncedDatabase.zoneID))])
    }

    func deleteZone() {
        appData.contacts = [:]
        persistLocalData()
        syncEngine.state.add(pendingDatabaseChanges: [.deleteZone(SyncedDatabase.zoneID)])
    }

    func contacts() -> [Contact] { appData.contacts.values.sorted { $0.id < $1.id } }
    func pendingCount() -> Int { syncEngine.state.pendingRecordZoneChanges.count }

    // MARK: Records

    func record(for contact: Contact) -> CKRecord {
        let record: CKRecord
        if let data = contact.lastKnownRecordData, let restored = SyncedDatabase.record(fromSystemFields: data) {
            record = restored
        } else {
            record = CKRecord(recordType: SyncedDatabase.recordType, recordID: CKRecord.ID(recordName: contact.id, zoneID: SyncedDatabase.zoneID))
        }
        record["name"] = contact.name
        record["value"] = contact.value
        return record
    }

    static func systemFields(of record: CKRecord) -> Data {
        let archiver = NSKeyedArchiver(requiringSecureCoding: true)
        record.encodeSystemFields(with: archiver)
        archiver.finishEncoding()
        return archiver.encodedData
    }

    static func record(fromSystemFields data: Data) -> CKRecord? {
        guard let unarchiver = try? NSKeyedUnarchiver(forReadingFrom: data) else { return nil }
        unarchiver.requiresSecureCoding = true
        return CKRecord(coder: unarchiver)
    }

    private func appendLog(_ line: String) {
        let data = Data((line + "\n").utf8)
        if let handle = try? FileHandle(forWritingTo: logURL) {
            handle.seekToEndOfFile()
            handle.write(data)
            handle.closeFile()
        } else {
            try? data.write(to: logURL)
        }
    }
}
