import Foundation

extension CKSyncEngine {
    /// What opening an engine came to: NimbusKit's engine (and why the saved state was not
    /// used, if it was not), or why there is none.
    struct Opened {
        var engine: SyncEngine?
        var stateError: (any Error)?
        var unavailable: CKError?
    }

    /// NimbusKit's engine on the serialization's journal. No server configured makes the engine
    /// unavailable; a journal that cannot be opened is moved aside and a fresh state made in the
    /// first of `directories` that can hold one, and none that can makes it unavailable.
    static func open(_ database: CKDatabase, serialization: inout State.Serialization,
                     bridge: CKSyncEngineBridge, directories: [URL]) -> Opened {
        let nimbus: Database
        do { nimbus = try database.nimbusDatabase() } catch {
            let cause = CKError(error)
            let reason = "CKSyncEngine is unavailable: \(cause.underlying.reason)"
            FileHandle.standardError.write(Data((reason + "\n").utf8))
            return Opened(unavailable: CKError(NimbusError(cause.underlying.code, reason: reason)))
        }
        let url = serialization.journalURL
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            return Opened(engine: try SyncEngine(database: nimbus, stateURL: url, delegate: bridge, tracksRecordIDs: true))
        } catch {
            let aside = url.path + ".unreadable-\(Int(Date().timeIntervalSince1970))"
            let moved = (try? FileManager.default.moveItem(atPath: url.path, toPath: aside)) != nil
            FileHandle.standardError.write(Data(("CKSyncEngine: its state at \(url.path) could not be opened (\(error)); "
                + (moved ? "moved to \(aside); " : "") + "starting with an empty state.\n").utf8))
            var failures: [String] = []
            for directory in directories {
                var fresh = State.Serialization.fresh(in: directory)
                fresh.userRecordName = serialization.userRecordName
                do {
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    let engine = try SyncEngine(database: nimbus, stateURL: fresh.journalURL, delegate: bridge, tracksRecordIDs: true)
                    serialization = fresh
                    return Opened(engine: engine, stateError: error)
                } catch {
                    failures.append("\(directory.path) (\(describe(error)))")
                }
            }
            let reason = "CKSyncEngine is unavailable: it could not open its state at \(url.path) (\(describe(error))) nor make one in "
                + (failures.isEmpty ? "any directory" : failures.joined(separator: " or "))
                + ". Set NIMBUS_STATE_DIR to a writable directory and make the engine again."
            FileHandle.standardError.write(Data((reason + "\n").utf8))
            return Opened(stateError: error, unavailable: CKError(NimbusError(.internalError, reason: reason)))
        }
    }

    /// A file error in a few words: the system's reason (`Not a directory`) when it has one.
    private static func describe(_ error: any Error) -> String {
        let error = error as NSError
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? any Error {
            let posix = underlying as NSError
            if posix.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(posix.code))) }
        }
        return error.localizedDescription
    }
}
