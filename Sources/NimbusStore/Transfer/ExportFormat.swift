import Foundation
import NimbusCore
import NimbusSupport

/// The directory `nimbus export` writes and `nimbus import` reads (docs/operations.md):
///
///     nimbus-export.json                              what is inside (the manifest)
///     <container>/<environment>/schema.json           the container's schema, as a schema file
///     <container>/<environment>/subscriptions.json    the user's subscriptions, in the wire form
///     <container>/<environment>/zones/<zone>.jsonl    one live record a line, in the wire form
///     assets/<hex SHA-256>                            each asset's bytes, once
///
/// Names need no escaping: containers, environments and zone names are made of letters,
/// digits and `.-_:` (a container is never only dots; a zone file ends in `.jsonl`).
package struct ExportManifest: Sendable, Hashable {
    package static let format = "nimbus-export"
    package static let version = 1
    package static let fileName = "nimbus-export.json"

    package struct DatabaseEntry: Sendable, Hashable {
        package var container: String
        package var environment: Environment
        package var zones: [String]
        package var records: Int
        package var subscriptions: Int

        package var path: String { "\(container)/\(environment.rawValue)" }
    }

    package var user: String
    package var exportedAt: Date
    package var databases: [DatabaseEntry]
    package var assets: Int
    package var assetBytes: Int64

    package var json: JSONValue {
        .object([
            "format": .string(Self.format), "version": .integer(Int64(Self.version)), "user": .string(user),
            "exportedAt": .string(exportedAt.formatted(.iso8601)), "assets": .integer(Int64(assets)), "assetBytes": .integer(assetBytes),
            "databases": .array(databases.map { entry in
                .object(["container": .string(entry.container), "environment": .string(entry.environment.rawValue),
                         "zones": .array(entry.zones.map { .string($0) }), "records": .integer(Int64(entry.records)),
                         "subscriptions": .integer(Int64(entry.subscriptions))])
            }),
        ])
    }

    /// Reads the manifest of an export directory; every problem names the file and what is wrong.
    package static func read(_ directory: URL) throws -> ExportManifest {
        let file = directory.appendingPathComponent(fileName)
        guard let data = try? Data(contentsOf: file) else {
            throw TransferError("\(directory.path) is not an export made by `nimbus export`: it has no \(fileName)")
        }
        func bad(_ what: String) -> TransferError { TransferError("\(file.path) is not a valid export manifest: \(what)") }
        guard let json = try? JSONValue.parse(Array(data)), case .object(let object) = json else { throw bad("it is not a JSON object") }
        guard case .string(Self.format)? = object["format"] else { throw bad("its format is not \"\(Self.format)\"") }
        guard case .integer(let version)? = object["version"], version == Int64(Self.version) else {
            throw bad("version \(object["version"].map { String(decoding: $0.serialized(), as: UTF8.self) } ?? "none") is not \(Self.version), the one this binary reads")
        }
        guard case .string(let user)? = object["user"], case .array(let entries)? = object["databases"] else {
            throw bad("it lacks \"user\" or \"databases\"")
        }
        var databases: [DatabaseEntry] = []
        for entry in entries {
            guard case .object(let fields) = entry, case .string(let container)? = fields["container"], Names.isValidContainer(container),
                  case .string(let environmentName)? = fields["environment"], let environment = Environment(rawValue: environmentName),
                  case .array(let zoneValues)? = fields["zones"] else {
                throw bad("a database entry lacks a valid container, environment or zones")
            }
            var zones: [String] = []
            for value in zoneValues {
                guard case .string(let zone) = value, Names.isValidZoneName(zone) else { throw bad("\(container) lists a zone name that is not valid") }
                zones.append(zone)
            }
            var records = 0, subscriptions = 0
            if case .integer(let count)? = fields["records"] { records = Int(count) }
            if case .integer(let count)? = fields["subscriptions"] { subscriptions = Int(count) }
            databases.append(DatabaseEntry(container: container, environment: environment, zones: zones, records: records, subscriptions: subscriptions))
        }
        var assets = 0
        var assetBytes: Int64 = 0
        if case .integer(let count)? = object["assets"] { assets = Int(count) }
        if case .integer(let bytes)? = object["assetBytes"] { assetBytes = bytes }
        return ExportManifest(user: user, exportedAt: Date(), databases: databases, assets: assets, assetBytes: assetBytes)
    }

    /// `assets/<hex SHA-256>`.
    package static func assetPath(fileChecksum: String) -> String? {
        guard let digest = Data(base64Encoded: fileChecksum), digest.count == 32 else { return nil }
        return "assets/" + Hex.encode(Array(digest))
    }
}

/// An export or import that cannot go on: the sentence says what to fix.
package struct TransferError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}
