import Foundation

/// Runs one page of a query (or continues one from a cursor).
public final class CKQueryOperation: CKDatabaseOperation, @unchecked Sendable {
    /// As many as the server gives in one page (its `maxResultsLimit`).
    public static let maximumResults = 0

    /// Where the next page of a query starts (`CKQueryCursor`, archived with `NSSecureCoding`).
    public typealias Cursor = CKQueryCursor

    public var query: CKQuery?
    public var cursor: Cursor?
    public var zoneID: CKRecordZone.ID?
    public var resultsLimit: Int = CKQueryOperation.maximumResults
    public var desiredKeys: [CKRecord.FieldKey]?
    public var recordMatchedBlock: ((CKRecord.ID, Result<CKRecord, any Error>) -> Void)?
    public var queryResultBlock: ((Result<Cursor?, any Error>) -> Void)?
    /// The pre-iOS 15 blocks.
    public var recordFetchedBlock: ((CKRecord) -> Void)?
    public var queryCompletionBlock: ((Cursor?, (any Error)?) -> Void)?

    public override init() { super.init() }

    public convenience init(query: CKQuery) {
        self.init()
        self.query = query
    }

    public convenience init(cursor: Cursor) {
        self.init()
        self.cursor = cursor
    }

    override func execute() async {
        do {
            let database = try targetDatabase()
            let page: CKDatabase.QueryResults
            if let cursor {
                page = try await database.records(continuingMatchFrom: cursor, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
            } else if let query {
                page = try await database.records(matching: query, inZoneWith: zoneID, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
            } else {
                throw CKError(.invalidArguments, userInfo: [NSLocalizedDescriptionKey: "A CKQueryOperation needs a query or a cursor."])
            }
            for (id, result) in page.matchResults {
                recordMatchedBlock?(id, result)
                if case .success(let record) = result { recordFetchedBlock?(record) }
            }
            queryResultBlock?(.success(page.queryCursor))
            queryCompletionBlock?(page.queryCursor, nil)
        } catch {
            let error = CKError(error)
            queryResultBlock?(.failure(error))
            queryCompletionBlock?(nil, error)
        }
    }
}
