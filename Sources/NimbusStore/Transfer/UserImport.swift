import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// `nimbus import`: an export directory (`ExportManifest`) into a user of this server.
///
/// Everything is read and checked before the first write: every record typed, named once and
/// within the limits, every asset file present with its checksum and size, the schemas
/// compatible with this server's, the subscriptions valid, the user there (`read`, then `check`
/// in `apply`). Then each database gets its schema, zones, assets, records and subscriptions. Records
/// are created with their names through the normal write path, so an import that stops half-way
/// (a lost connection, a full disk) is finished by running it again: a record created already
/// with the same content is answered as it is (docs/api.md: retrying a create is safe).
package struct UserImport: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded {
        // The stores it calls run as it does.
        didSet { accounts = accounts.on(execution); zones = zones.on(execution); schemas = schemas.on(execution); records = records.on(execution); assets = assets.on(execution); subscriptions = subscriptions.on(execution) }
    }
    /// What an import writes through: each store as a request of the user would.
    var accounts: AccountStore
    var zones: ZoneStore
    var schemas: SchemaStore
    var records: RecordStore
    var assets: AssetStore
    var subscriptions: SubscriptionStore

    /// The device that imported records show as their creator.
    package static let device = "nimbus-import"

    /// A checked export.
    package struct Plan: Sendable {
        package var manifest: ExportManifest
        var databases: [DatabasePlan]
        /// Asset files by `fileChecksum`, their bytes checked.
        var assetFiles: [String: URL]
        package var assetCount: Int { assetFiles.count }
        package var recordCount: Int { databases.reduce(0) { $0 + $1.zones.reduce(0) { $0 + $1.records.count } } }
    }

    struct DatabasePlan: Sendable {
        var entry: ExportManifest.DatabaseEntry
        var schema: ContainerSchema
        var subscriptions: [JSONValue]
        var zones: [(name: String, records: [RecordOperation])]
        /// The `fileChecksum`s of the assets its records hold.
        var assets: Set<String> = []
    }

    // MARK: - Reading

    /// Reads and checks the export at `directory`; nothing is written.
    package static func read(_ directory: URL) throws -> Plan {
        let manifest = try ExportManifest.read(directory)
        var plan = Plan(manifest: manifest, databases: [], assetFiles: [:])
        var assetSizes: [String: Int64] = [:]
        for entry in manifest.databases {
            let base = directory.appendingPathComponent(entry.path, isDirectory: true)
            let schemaJSON = try readJSON(base.appendingPathComponent("schema.json"))
            let schema: ContainerSchema
            do { schema = try ContainerSchema.parseFile(schemaJSON) } catch {
                throw TransferError("\(base.path)/schema.json: \(error.reason)")
            }
            guard schema.container == entry.container else {
                throw TransferError("\(base.path)/schema.json is the schema of \(schema.container), not of \(entry.container)")
            }
            guard case .array(let subscriptions) = try readJSON(base.appendingPathComponent("subscriptions.json")) else {
                throw TransferError("\(base.path)/subscriptions.json is not a JSON array")
            }
            var database = DatabasePlan(entry: entry, schema: schema, subscriptions: subscriptions, zones: [])
            for zone in entry.zones {
                let file = base.appendingPathComponent("zones/\(zone).jsonl")
                let operations = try readRecords(file) { asset, recordName in
                    guard let path = ExportManifest.assetPath(fileChecksum: asset.fileChecksum) else {
                        throw TransferError("\(file.path): record \(recordName) has an asset whose fileChecksum is not a base64 SHA-256")
                    }
                    database.assets.insert(asset.fileChecksum)
                    if let known = assetSizes[asset.fileChecksum], known == asset.size { return }
                    let assetFile = directory.appendingPathComponent(path)
                    try checkAsset(assetFile, checksum: asset.fileChecksum, size: asset.size, neededBy: "record \(recordName) of zone \(zone)")
                    assetSizes[asset.fileChecksum] = asset.size
                    plan.assetFiles[asset.fileChecksum] = assetFile
                }
                database.zones.append((zone, Self.referencedFirst(operations)))
            }
            plan.databases.append(database)
        }
        return plan
    }

    private static func readJSON(_ file: URL) throws -> JSONValue {
        guard let data = try? Data(contentsOf: file) else { throw TransferError("the export has no \(file.path)") }
        do { return try JSONValue.parse(Array(data)) } catch { throw TransferError("\(file.path) is not valid JSON: \(error.description)") }
    }

    /// One record a line, typed as the wire form says; `asset` sees every asset value.
    private static func readRecords(_ file: URL, asset: (AssetValue, String) throws -> Void) throws -> [RecordOperation] {
        guard let data = try? Data(contentsOf: file) else { throw TransferError("the export has no \(file.path)") }
        var operations: [RecordOperation] = []
        var lines: [String: Int] = [:]   // the line of each record name
        var lineNumber = 0
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            lineNumber += 1
            func bad(_ what: String) -> TransferError { TransferError("\(file.path) line \(lineNumber): \(what)") }
            guard let json = try? JSONValue.parse(Array(line)), case .object(let object) = json else { throw bad("not a JSON object") }
            guard case .string(let name)? = object["recordName"], Names.isValidRecordName(name) else { throw bad("no valid recordName") }
            if let earlier = lines.updateValue(lineNumber, forKey: name) {
                throw bad("record \(name) is also on line \(earlier); an export holds each record once (remove one of them)")
            }
            guard case .string(let type)? = object["recordType"], Names.isValidRecordType(type) else { throw bad("record \(name) has no valid recordType") }
            guard case .object(let fields)? = object["fields"] else { throw bad("record \(name) has no fields object") }
            var raw: [RawField] = []
            for (fieldName, field) in fields.sorted(by: { $0.key < $1.key }) {
                guard case .object(let typed) = field, let value = typed["value"], case .string(let typeName)? = typed["type"],
                      let fieldType = FieldType(name: typeName) else {
                    throw bad("field \(fieldName) of record \(name) is not {\"value\", \"type\"} with a known type")
                }
                let decoded: FieldValue
                do { decoded = try FieldValue.decode(value, as: fieldType) } catch {
                    throw bad("field \(fieldName) of record \(name) is not a valid \(fieldType.name) (it is \(error.given))")
                }
                for stored in decoded.assets { try asset(stored, name) }
                raw.append(RawField(name: fieldName, value: value, declaredType: typeName))
            }
            operations.append(RecordOperation(kind: .create, recordName: name, recordType: type, fields: raw))
        }
        return operations
    }

    /// Checks that an asset file is there with exactly the bytes its checksum names.
    private static func checkAsset(_ file: URL, checksum: String, size: Int64, neededBy owner: String) throws {
        guard let handle = FileHandle(forReadingAtPath: file.path) else {
            throw TransferError("the export is missing the asset file \(file.path) (checksum \(checksum), \(size) bytes) that \(owner) needs; nothing was imported")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        var total: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(chunk)
            total += Int64(chunk.count)
        }
        guard total == size, Data(hasher.finalize()).base64EncodedString() == checksum else {
            throw TransferError("the asset file \(file.path) does not hold the bytes of checksum \(checksum) (\(size) bytes; the file has \(total)), which \(owner) needs; nothing was imported")
        }
    }

    /// Records whose REFERENCE targets in the same zone come first, so that a target exists
    /// when its referrer is created (a cycle keeps the order of the file).
    static func referencedFirst(_ operations: [RecordOperation]) -> [RecordOperation] {
        let byName = Dictionary(operations.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
        var state: [String: Bool] = [:]   // false: in progress, true: placed
        var ordered: [RecordOperation] = []
        ordered.reserveCapacity(operations.count)
        func place(_ operation: RecordOperation) {
            guard state[operation.recordName] == nil else { return }
            state[operation.recordName] = false
            for target in Self.sameZoneTargets(operation) {
                if let next = byName[target] { place(next) }
            }
            state[operation.recordName] = true
            ordered.append(operation)
        }
        operations.forEach(place)
        return ordered
    }

    private static func sameZoneTargets(_ operation: RecordOperation) -> [String] {
        operation.fields.flatMap { field -> [String] in
            guard let type = field.declaredType, type.hasPrefix("REFERENCE"),
                  let type = FieldType(name: type), let value = try? FieldValue.decode(field.value, as: type) else { return [] }
            let references: [FieldValue] = if case .list(_, let values) = value { values } else { [value] }
            return references.compactMap { reference in
                guard case .reference(let target) = reference else { return nil }
                return target.recordName
            }
        }
    }
}
