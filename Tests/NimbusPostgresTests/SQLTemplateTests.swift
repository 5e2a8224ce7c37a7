import NimbusPostgres
import Testing

/// Statement templates (`SQL+Template`): text built once, values bound per execution.
@Suite struct SQLTemplateTests {
    static let template: SQL = "SELECT \(parameter: 2)::text || ':' || \(parameter: 1)::text, \(parameter: 2) + 1, \(unsafeColumns: "'c'")"

    @Test func placeholdersAreWrittenByNumberAndTheValuesBoundInThatOrder() {
        #expect(Self.template.text == "SELECT $2::text || ':' || $1::text, $2 + 1, 'c'")
        #expect(Self.template.parameters.isEmpty)
        let bound = Self.template.binding([.text("a"), .int64(41)])
        #expect(bound.text == Self.template.text)
        #expect(bound.parameters == [.text("a"), .int64(41)])
        let again = Self.template.binding([.text("b"), .int64(1)])
        #expect(again.parameters == [.text("b"), .int64(1)], "each binding has its own values")
    }

    @Test func aBoundTemplateRunsWithItsValuesAndAgainWithOthers() async throws {
        try await TestDatabase.with { database in
            let rows = try await database.withConnection { connection in
                try ["x", "y"].enumerated().map { index, text in
                    try connection.queryFirst(Self.template.binding([.text(text), .int64(Int64(index))])) {
                        (try $0.string(0), try $0.int64(1))
                    }
                }
            }
            #expect(rows.map { $0?.0 } == ["0:x", "1:y"])
            #expect(rows.map { $0?.1 } == [1, 2])
        }
    }
}
