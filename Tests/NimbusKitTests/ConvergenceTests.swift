import Foundation
import Testing
@testable import NimbusKit

/// Three devices doing random creates, updates and deletes, with offline spells and conflicts;
/// at the end every replica equals the server. Bounded by `NIMBUSKIT_CONVERGENCE_SECONDS`
/// (default 45; set it higher for a longer run).
@Suite("SyncEngine convergence against the real server")
struct ConvergenceTests {
    @Test func threeDevicesWithOfflineSpellsAndConflictsConvergeOnTheServer() async throws {
        let seconds = Double(ProcessInfo.processInfo.environment["NIMBUSKIT_CONVERGENCE_SECONDS"] ?? "") ?? 45
        let server = try TestServer.start()
        defer { server.stop() }
        var devices: [(Device, ChaosProxy)] = []
        for name in ["mac", "phone", "ipad"] {
            let proxy = try ChaosProxy(upstreamPort: server.port)
            devices.append((try Device.make(server, token: try server.device(user: "conv", device: name), url: proxy.url), proxy))
        }
        defer { for (_, proxy) in devices { proxy.stop() } }
        let zones = [ZoneID.default, ZoneID("Work")]
        try await devices[0].0.database.createZone(zones[1])

        let deadline = Date().addingTimeInterval(seconds)
        var operations = 0
        var offlineSpells = 0
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for (index, (device, proxy)) in devices.enumerated() {
                group.addTask {
                    var generator = SystemRandomNumberGenerator()
                    var done = 0
                    var spells = 0
                    var offlineUntil: Date? = nil
                    while Date() < deadline {
                        if let until = offlineUntil, Date() >= until {
                            proxy.setMode(.pass)
                            offlineUntil = nil
                        } else if offlineUntil == nil && Int.random(in: 0..<25, using: &generator) == 0 {
                            proxy.setMode(.offline)
                            offlineUntil = Date().addingTimeInterval(Double.random(in: 0.5...3, using: &generator))
                            spells += 1
                        }
                        try await ConvergenceTests.randomEdit(device, zones: zones, device: index, using: &generator)
                        done += 1
                        if Int.random(in: 0..<4, using: &generator) == 0 {
                            await device.engine.sendChanges()
                            try? await device.engine.fetchChanges()
                        }
                        try await Task.sleep(nanoseconds: UInt64.random(in: 5_000_000...40_000_000, using: &generator))
                    }
                    proxy.setMode(.pass)
                    return (done, spells)
                }
            }
            for try await (done, spells) in group {
                operations += done
                offlineSpells += spells
            }
        }
        // Settle: everyone sends and fetches until nothing moves.
        for _ in 0..<3 {
            for (device, _) in devices { try await device.sync(60) }
        }
        for zone in zones {
            let contents = fieldsByID(try await serverContents(devices[0].0.database, zone: zone))
            for (device, _) in devices {
                let replica = fieldsByID(device.replica.snapshot.filter { $0.key.zoneID == zone })
                #expect(replica == contents, "zone \(zone): a replica differs from the server (\(replica.count) vs \(contents.count) records)")
                #expect(await device.engine.status.failed.isEmpty)
            }
        }
        #expect(operations > 100)
        #expect(offlineSpells > 0)
        let conflicts = devices.map { $0.0.replica.conflicts.count }.reduce(0, +)
        print("convergence: \(operations) operations, \(offlineSpells) offline spells, \(conflicts) conflicts resolved")
    }

    static func randomEdit(_ device: Device, zones: [ZoneID], device index: Int,
                           using generator: inout SystemRandomNumberGenerator) async throws {
        let zone = zones[Int.random(in: 0..<zones.count, using: &generator)]
        let local = device.replica.snapshot.values.filter { $0.zoneID == zone }
        let choice = local.isEmpty ? 0 : Int.random(in: 0..<10, using: &generator)
        switch choice {
        case 0...3:
            var record = Record(recordType: "Item", id: .make(in: zone))
            record.set("title", "made by \(index)")
            record.set("count", Int64.random(in: 0...100, using: &generator))
            try await device.save(record)
        case 4...8:
            guard var record = local.randomElement(using: &generator) else { return }
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: record.set("title", "edited by \(index) \(Int.random(in: 0...999, using: &generator))")
            case 1: record.set("count", Int64.random(in: 0...100, using: &generator))
            default: record.set("note\(index)", "note \(Int.random(in: 0...999, using: &generator))")
            }
            try await device.save(record)
        default:
            guard let record = local.randomElement(using: &generator) else { return }
            try await device.delete(record.id)
        }
    }
}
