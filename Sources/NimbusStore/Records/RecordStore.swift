import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// Records: writes (through the write strategies, `Write/`), lookups, queries and the change
/// feed (`Read/`).
package struct RecordStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded {
        // The stores it calls run as it does.
        didSet { accounts = accounts.on(execution); schemas = schemas.on(execution); assets = assets.on(execution) }
    }
    /// Looks up a cached session's token before a strategy that does not check it itself.
    var accounts: AccountStore
    /// For the advice on types and fields missing in production.
    var schemas: SchemaStore
    /// Checks the receipts of assets a write references.
    var assets: AssetStore
}

extension RecordStore {
    /// `records/modify`: the first of `writeStrategies` that takes the request writes it.
    ///
    /// `proof`: a session from the cache is checked by the write itself, or its token is looked
    /// up again before anything else.
    package func modifyRecords(_ session: Session, zoneName: String, operations: [Result<RecordOperation, ItemError>],
                               atomic: Bool, limits: Limits, proof: SessionProof = .verified) async throws -> [ModifyResult] {
        var request = RecordWriteRequest(session: session, zoneName: zoneName, operations: operations, atomic: atomic,
                                         limits: limits, proof: proof)
        for strategy in Self.writeStrategies {
            if !strategy.checksTokenItself, request.proof != .verified {
                request.session = try await accounts.verify(request.session, proof: request.proof)
                request.proof = .verified
            }
            if let results = try await strategy.attempt(&request, in: self) { return try await advised(results, session: session) }
        }
        throw SyncError(.internalError, "No write strategy took this request.")
    }

    /// Items refused because production lacks a type or field get reasons that say whether it
    /// awaits a deploy or exists nowhere (with the closest deployed names).
    private func advised(_ results: [ModifyResult], session: Session) async throws -> [ModifyResult] {
        guard results.contains(where: { if case .failed(let error) = $0 { error.missingInProduction != nil } else { false } }) else {
            return results
        }
        let production = try await schemas.schema(container: session.container, environment: .production)
        let development = try await schemas.schema(container: session.container, environment: .development)
        return results.map { result in
            guard case .failed(var error) = result, let missing = error.missingInProduction else { return result }
            error.reason = missing.field.map {
                SchemaAdvice.missingField($0, of: missing.recordType, container: session.container, production: production, development: development)
            } ?? SchemaAdvice.missingRecordType(missing.recordType, container: session.container, production: production, development: development)
            return .failed(error)
        }
    }
}
