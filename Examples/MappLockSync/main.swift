import Foundation
import NimbusKitCK

// MappLockSync: MappLock's CloudSyncService (the plan's code, import changed, its three stubs
// filled with NimbusKit's engine) as one device. NIMBUS_URL / NIMBUS_TOKEN pick the server and
// device; MAPPLOCK_DIR holds the device's configurations and engine state.
//
//   MappLockSync create NAME DURATION       a new configuration (prints its id), then sync
//   MappLockSync edit ID KEY VALUE          KEY: name | duration | block-website; then sync
//   MappLockSync sync
//   MappLockSync list                       "id name duration websites" per configuration
//   MappLockSync watch SECONDS ID NAME      subscribed; exits when a notification-driven sync brought NAME

func usage() -> Never {
    FileHandle.standardError.write(Data("usage: MappLockSync create|edit|sync|list|watch … (see main.swift)\n".utf8))
    exit(64)
}

func line(_ configuration: SessionConfiguration) -> String {
    "\(configuration.id.uuidString) \(configuration.name) \(Int(configuration.duration)) \(configuration.blockedWebsites.sorted().joined(separator: ","))"
}

func run(_ arguments: [String]) async throws {
    guard let command = arguments.first else { usage() }
    let service = CloudSyncService.shared
    let engine = MappLockEngine.shared
    switch command {
    case "create":
        guard arguments.count == 3, let duration = Double(arguments[2]) else { usage() }
        let configuration = SessionConfiguration(name: arguments[1], duration: duration)
        engine.put(configuration)
        try await service.syncConfigurations()
        print(configuration.id.uuidString)
    case "edit":
        guard arguments.count == 4 else { usage() }
        try await service.syncConfigurations()
        guard let current = engine.configurations().first(where: { $0.id.uuidString == arguments[1] }) else {
            throw CKError(.unknownItem, userInfo: [NSLocalizedDescriptionKey: "no configuration \(arguments[1]) on this device"])
        }
        engine.put(try current.editing(arguments[2], arguments[3]))
        try await service.syncConfigurations()
    case "sync":
        try await service.syncConfigurations()
    case "list":
        for configuration in engine.configurations() { print(line(configuration)) }
    case "watch":
        guard arguments.count == 4, let seconds = Double(arguments[1]) else { usage() }
        let deadline = Date().addingTimeInterval(seconds)
        while !engine.isSubscribed && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        print("subscribed")
        fflush(stdout)
        while Date() < deadline {
            if engine.wakeCount > 0, engine.configurations().first(where: { $0.id.uuidString == arguments[2] })?.name == arguments[3] {
                print("woke \(engine.wakeCount)")
                return
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        print("timeout")
        exit(1)
    default:
        usage()
    }
}

do {
    try await run(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("MappLockSync: \(error)\n".utf8))
    exit(1)
}
