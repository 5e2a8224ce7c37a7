import NimbusSupport
@testable import NimbusCore
import Testing

/// Parsing `records/query` (docs/api.md records/query, Details: Query and Limits).
@Suite struct RecordQueryTests {
    static let schema: [String: RecordTypeSchema] = [
        "Item": RecordTypeSchema(name: "Item", fields: ["title": .string, "count": .int64, "at": .timestamp, "score": .double,
                                                        "tags": FieldType(.string, isList: true), "parent": .reference]),
    ]

    func parse(_ body: String, limits: Limits = Limits()) -> Result<RecordQuery, SyncError> {
        Result { () throws(SyncError) -> RecordQuery in try RecordQuery.parse(Fixture.json(body), schema: Self.schema, limits: limits) }
    }

    /// A body with one filter on `Item`.
    func filter(_ field: String, _ comparator: String, _ value: String, type: String? = nil) -> Result<QueryFilter, SyncError> {
        let typeMember = type.map { #", "type": "\#($0)""# } ?? ""
        let body = #"{"query": {"recordType": "Item", "filterBy": [{"fieldName": "\#(field)", "comparator": "\#(comparator)", "fieldValue": {"value": \#(value)\#(typeMember)}}]}}"#
        return parse(body).map { $0.filters[0] }
    }

    func refusal<Value>(_ result: Result<Value, SyncError>) -> SyncError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    // MARK: defaults

    @Test func aMinimalQueryHasNoFiltersNoSortAndTheDefaultLimit() throws {
        let query = try parse(#"{"query": {"recordType": "Item"}}"#).get()
        #expect(query == RecordQuery(recordType: "Item", filters: [], sort: [], resultsLimit: 200, desiredKeys: nil, continuationMarker: nil))
    }

    @Test(arguments: [#"{}"#, #"{"query": "Item"}"#, #"{"query": {}}"#, #"{"query": {"recordType": "1Item"}}"#,
                      #"{"query": {"recordType": 5}}"#, #"{"query": {"recordType": "Item", "filterBy": {}}}"#,
                      #"{"query": {"recordType": "Item", "sortBy": "title"}}"#])
    func aMalformedQueryIsBadRequest(body: String) {
        #expect(refusal(parse(body))?.code == .badRequest)
    }

    // MARK: comparators

    @Test(arguments: ["EQUALS", "NOT_EQUALS", "LESS_THAN", "LESS_THAN_OR_EQUALS", "GREATER_THAN", "GREATER_THAN_OR_EQUALS"])
    func scalarComparatorsTakeAValueOfTheFieldsType(comparator: String) throws {
        let parsed = try filter("count", comparator, "5").get()
        #expect(parsed.comparator.rawValue == comparator)
        #expect(parsed.field == .field("count"))
        #expect(parsed.value == .int64(5))
    }

    @Test(arguments: ["IN", "NOT_IN"])
    func inAndNotInTakeAListOfTheFieldsType(comparator: String) throws {
        #expect(try filter("count", comparator, "[1, 2]").get().value == .list(elementType: .int64, [.int64(1), .int64(2)]))
        #expect(try filter("title", comparator, #"["a"]"#, type: "STRING_LIST").get().value == .list(elementType: .string, [.string("a")]))
    }

    @Test(arguments: ["IN", "NOT_IN"])
    func inAndNotInRefuseAScalar(comparator: String) {
        #expect(refusal(filter("count", comparator, "1"))?.code == .badRequest)
        #expect(refusal(filter("count", comparator, "1", type: "INT64"))?.reason.contains("_LIST") == true)
        #expect(refusal(filter("___recordID", comparator, #""a""#))?.code == .badRequest)
    }

    @Test(arguments: ["IN", "NOT_IN"])
    func inAndNotInOnAFieldUnknownToTheSchemaRefuseAnUntypedScalar(comparator: String) {
        // docs/api.md: IN/NOT_IN take a _LIST value, also when the type comes from the value itself.
        #expect(refusal(filter("unknown", comparator, #""a""#))?.code == .badRequest)
        #expect(refusal(filter("unknown", comparator, "5"))?.code == .badRequest)
        #expect((try? filter("unknown", comparator, #"["a"]"#).get().value) == .list(elementType: .string, [.string("a")]))
    }

    @Test func listContainsTakesAnElementOfAListField() throws {
        #expect(try filter("tags", "LIST_CONTAINS", #""red""#).get().value == .string("red"))
    }

    @Test func listContainsRefusesAListValue() {
        // docs/api.md: LIST_CONTAINS takes an element value; a _LIST value could never be an element of a STRING_LIST.
        #expect(refusal(filter("tags", "LIST_CONTAINS", #"["red"]"#, type: "STRING_LIST"))?.code == .badRequest)
    }

    @Test func aDeclaredTypeThatContradictsTheFieldsTypeIsBadRequest() {
        // docs/api.md Errors: a wrong field type is BAD_REQUEST; `___recordID` takes a STRING record name.
        #expect(refusal(filter("___recordID", "EQUALS", "5", type: "INT64"))?.code == .badRequest)
        #expect(refusal(filter("___createTime", "EQUALS", #""x""#, type: "STRING"))?.code == .badRequest)
        #expect(refusal(filter("count", "EQUALS", #""5""#, type: "STRING"))?.code == .badRequest)
        // A REFERENCE names a record, so it may stand for ___recordID.
        #expect((try? filter("___recordID", "EQUALS", #"{"recordName": "r"}"#, type: "REFERENCE").get().value)
                == .reference(RecordReference(recordName: "r")))
    }

    @Test func listContainsOnAFieldThatIsNotAListIsRefused() {
        let error = refusal(filter("title", "LIST_CONTAINS", #""red""#))
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("STRING") == true)
        #expect(refusal(filter("___createTime", "LIST_CONTAINS", "1"))?.code == .badRequest)
    }

    @Test func beginsWithNeedsAString() throws {
        #expect(try filter("title", "BEGINS_WITH", #""Saf""#).get().value == .string("Saf"))
        #expect(try filter("unknown", "BEGINS_WITH", #""Saf""#).get().value == .string("Saf"))
        #expect(try filter("___recordID", "BEGINS_WITH", #""evt-""#).get().value == .string("evt-"))
        #expect(refusal(filter("count", "BEGINS_WITH", "1"))?.code == .badRequest)
        #expect(refusal(filter("title", "BEGINS_WITH", "1", type: "INT64"))?.code == .badRequest)
        #expect(refusal(filter("unknown", "BEGINS_WITH", "1"))?.code == .badRequest)
        #expect(refusal(filter("___modTime", "BEGINS_WITH", "1"))?.code == .badRequest)
    }

    @Test(arguments: ["equals", "CONTAINS", "LIKE", ""])
    func anUnknownComparatorIsBadRequestListingTheKnownOnes(comparator: String) {
        let error = refusal(filter("title", comparator, #""x""#))
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("LIST_CONTAINS") == true)
    }

    // MARK: typing filter values

    @Test func systemFieldsHaveTheirOwnTypes() throws {
        #expect(try filter("___recordID", "EQUALS", #""evt-1""#).get() == QueryFilter(field: .recordName, comparator: .equals, value: .string("evt-1")))
        #expect(try filter("___createTime", "GREATER_THAN", "1700000000000").get().value == .timestamp(1_700_000_000_000))
        #expect(try filter("___modTime", "LESS_THAN", "5").get() == QueryFilter(field: .modTime, comparator: .lessThan, value: .timestamp(5)))
        #expect(try filter("___recordID", "IN", #"["a", "b"]"#).get().value == .list(elementType: .string, [.string("a"), .string("b")]))
        #expect(refusal(filter("___recordID", "EQUALS", "5"))?.code == .badRequest)
        #expect(refusal(filter("___createTime", "EQUALS", #""yesterday""#))?.code == .badRequest)
    }

    @Test func schemaTypesTypeUntypedValues() throws {
        #expect(try filter("at", "EQUALS", "5").get().value == .timestamp(5))
        #expect(try filter("score", "EQUALS", "5").get().value == .double(5))
        #expect(try filter("parent", "EQUALS", #"{"recordName": "p"}"#).get().value == .reference(RecordReference(recordName: "p")))
        #expect(refusal(filter("count", "EQUALS", #""five""#))?.reason.contains("INT64") == true)
    }

    @Test func unknownFieldsAreTypedFromTheDeclaredTypeOrTheValue() throws {
        #expect(try filter("other", "EQUALS", "5").get().value == .int64(5))
        #expect(try filter("other", "EQUALS", "5", type: "TIMESTAMP").get().value == .timestamp(5))
        #expect(try filter("other", "EQUALS", "1.5").get().value == .double(1.5))
        #expect(refusal(filter("other", "EQUALS", "true"))?.code == .badRequest)
        #expect(refusal(filter("other", "EQUALS", "5", type: "NUMBER"))?.code == .badRequest)
    }

    @Test(arguments: [
        #"[{"comparator": "EQUALS", "fieldValue": {"value": 1}}]"#,
        #"[{"fieldName": "bad-name", "comparator": "EQUALS", "fieldValue": {"value": 1}}]"#,
        #"[{"fieldName": "count", "fieldValue": {"value": 1}}]"#,
        #"[{"fieldName": "count", "comparator": "EQUALS"}]"#,
        #"[{"fieldName": "count", "comparator": "EQUALS", "fieldValue": {"value": null}}]"#,
        #"[{"fieldName": "count", "comparator": "EQUALS", "fieldValue": 1}]"#,
        #"[{"fieldName": "count", "comparator": "EQUALS", "fieldValue": {"value": 1, "type": 5}}]"#,
        #"["count"]"#,
    ])
    func malformedFiltersAreBadRequest(filterBy: String) {
        #expect(refusal(parse(#"{"query": {"recordType": "Item", "filterBy": \#(filterBy)}}"#))?.code == .badRequest)
    }

    @Test func severalFiltersAreKeptInOrder() throws {
        let body = #"{"query": {"recordType": "Item", "filterBy": [{"fieldName": "count", "comparator": "GREATER_THAN", "fieldValue": {"value": 1}}, {"fieldName": "title", "comparator": "EQUALS", "fieldValue": {"value": "x"}}]}}"#
        #expect(try parse(body).get().filters.map(\.field) == [.field("count"), .field("title")])
    }

    // MARK: sortBy

    @Test func sortByParsesFieldsAndDirectionsDefaultingToAscending() throws {
        let body = #"{"query": {"recordType": "Item", "sortBy": [{"fieldName": "count", "ascending": false}, {"fieldName": "___modTime"}, {"fieldName": "title", "ascending": null}]}}"#
        #expect(try parse(body).get().sort == [QuerySort(field: .field("count"), ascending: false), QuerySort(field: .modTime, ascending: true),
                                              QuerySort(field: .field("title"), ascending: true)])
    }

    @Test(arguments: [#"[{"ascending": true}]"#, #"[{"fieldName": "_bad"}]"#, #"[{"fieldName": "title", "ascending": "yes"}]"#, #"["title"]"#])
    func malformedSortByIsBadRequest(sortBy: String) {
        #expect(refusal(parse(#"{"query": {"recordType": "Item", "sortBy": \#(sortBy)}}"#))?.code == .badRequest)
    }

    // MARK: resultsLimit, desiredKeys, continuationMarker

    @Test(arguments: [("1", 1), ("200", 200), ("399", 399), ("400", 400), ("401", 400), ("100000", 400), ("null", 200)])
    func resultsLimitIsCappedAtTheMaximum(value: String, expected: Int) throws {
        #expect(try parse(#"{"query": {"recordType": "Item"}, "resultsLimit": \#(value)}"#).get().resultsLimit == expected)
    }

    @Test(arguments: ["0", "-1", "1.5", "10.0", #""10""#, "true", "[10]"])
    func aResultsLimitThatIsNotAPositiveIntegerIsBadRequest(value: String) {
        let error = refusal(parse(#"{"query": {"recordType": "Item"}, "resultsLimit": \#(value)}"#))
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("resultsLimit") == true)
    }

    @Test func resultsLimitFollowsTheConfiguredLimits() throws {
        var limits = Limits()
        limits.defaultResultsLimit = 10
        limits.maxResultsLimit = 20
        #expect(try parse(#"{"query": {"recordType": "Item"}}"#, limits: limits).get().resultsLimit == 10)
        #expect(try parse(#"{"query": {"recordType": "Item"}, "resultsLimit": 50}"#, limits: limits).get().resultsLimit == 20)
        #expect(try RecordQuery.resultsLimit(nil, limits: limits) == 10)
    }

    @Test func desiredKeysAndContinuationMarkerAreRead() throws {
        let query = try parse(#"{"query": {"recordType": "Item"}, "desiredKeys": ["title", "count"], "continuationMarker": "abc_-1"}"#).get()
        #expect(query.desiredKeys == ["title", "count"])
        #expect(query.continuationMarker == "abc_-1")
    }

    @Test(arguments: [#""desiredKeys": "title""#, #""desiredKeys": [1]"#, #""continuationMarker": """#, #""continuationMarker": 5"#,
                      #""continuationMarker": ["m"]"#])
    func malformedDesiredKeysOrMarkersAreBadRequest(member: String) {
        #expect(refusal(parse(#"{"query": {"recordType": "Item"}, \#(member)}"#))?.code == .badRequest)
    }

    @Test func nullDesiredKeysAndMarkerMeanNone() throws {
        let query = try parse(#"{"query": {"recordType": "Item"}, "desiredKeys": null, "continuationMarker": null}"#).get()
        #expect(query.desiredKeys == nil)
        #expect(query.continuationMarker == nil)
    }
}
