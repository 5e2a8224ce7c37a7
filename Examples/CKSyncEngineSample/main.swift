import Foundation
import NimbusKitCK
#if canImport(Glibc)
import Glibc
#endif

// CKSyncEngineSample: SyncedDatabase (Apple's sample-app shape, Apple's API only) as one device,
// from the command line. Configured by NIMBUS_URL, NIMBUS_TOKEN, NIMBUS_CONTAINER and
// NIMBUS_STATE_DIR (where the engine keeps its state); DIR holds the app's own data.
//
//   CKSyncEngineSample DIR add VALUE NAME...     add contacts and send them
//   CKSyncEngineSample DIR add-and-kill VALUE NAME...   add, wait for the state update, SIGKILL itself
//   CKSyncEngineSample DIR kill-while-sending MS VALUE NAME...  add, start sending, SIGKILL after MS ms
//   CKSyncEngineSample DIR set NAME VALUE        change a contact's value and send (conflicts merged)
//   CKSyncEngineSample DIR delete NAME           delete a contact and send
//   CKSyncEngineSample DIR delete-zone           delete the Contacts zone (and its records) and send
//   CKSyncEngineSample DIR sync                  fetch, then send what is pending
//   CKSyncEngineSample DIR list                  one "name value" line per local contact
//   CKSyncEngineSample DIR pending               the number of pending record changes
//   CKSyncEngineSample DIR watch SECONDS COUNT   automatic sync until COUNT contacts are local

func usage() -> Never {
    FileHandle.standardError.write(Data("usage: CKSyncEngineSample DIR add|add-and-kill|kill-while-sending|set|delete|sync|list|pending|watch …\n".utf8))
    exit(64)
}

func run(_ arguments: [String]) async throws {
    guard arguments.count >= 2 else { usage() }
    let directory = URL(fileURLWithPath: arguments[0])
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let command = arguments[1]
    let rest = Array(arguments.dropFirst(2))
    let database = SyncedDatabase(directory: directory, automaticallySync: command == "watch")
    await database.start()
    let engine = await database.syncEngine
    switch command {
    case "add":
        guard rest.count >= 2 else { usage() }
        await database.addContacts(Array(rest.dropFirst()), value: rest[0])
        try await engine.sendChanges()
    case "add-and-kill":
        guard rest.count >= 2 else { usage() }
        await database.addContacts(Array(rest.dropFirst()), value: rest[0])
        // The app persists the state serialization on stateUpdate; wait until the pending
        // changes are in it, then die without sending.
        try await engine.fetchChanges()
        kill(getpid(), SIGKILL)
    case "kill-while-sending":
        guard rest.count >= 3, let milliseconds = UInt64(rest[0]) else { usage() }
        await database.addContacts(Array(rest.dropFirst(2)), value: rest[1])
        // As in add-and-kill: the kill must come while sending, after the pending changes are
        // in the saved state (on a busy machine a 40 ms kill once came before, and the changes
        // were never pending anywhere, as with Apple's engine before its stateUpdate).
        try await engine.fetchChanges()
        Task { try await engine.sendChanges() }
        try await Task.sleep(nanoseconds: milliseconds * 1_000_000)
        kill(getpid(), SIGKILL)
    case "set":
        guard rest.count == 2 else { usage() }
        await database.setValue(rest[1], of: rest[0])
        try await engine.sendChanges()
        // A conflict handled in handleEvent added the save again: send it.
        if await database.pendingCount() > 0 { try await engine.sendChanges() }
        print("conflicts \(await database.conflictsHandled)")
    case "delete":
        guard rest.count == 1 else { usage() }
        await database.deleteContact(rest[0])
        try await engine.sendChanges()
    case "delete-zone":
        await database.deleteZone()
        try await engine.sendChanges()
    case "sync":
        try await engine.fetchChanges()
        try await engine.sendChanges()
    case "list":
        for contact in await database.contacts() { print("\(contact.name) \(contact.value)") }
    case "pending":
        try await engine.fetchChanges()
        print(await database.pendingCount())
    case "watch":
        guard rest.count == 2, let seconds = Double(rest[0]), let count = Int(rest[1]) else { usage() }
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, await database.contacts().count != count { try await Task.sleep(nanoseconds: 50_000_000) }
        print(await database.contacts().count)
    default:
        usage()
    }
}

do {
    try await run(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("CKSyncEngineSample: \(error)\n".utf8))
    exit(1)
}
