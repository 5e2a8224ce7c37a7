import NimbusWire
import Testing

@Suite struct JSONValueTests {
    @Test func accessorsAnswerOnlyForTheirOwnCase() {
        let values: [JSONValue] = [.null, .bool(true), .integer(7), .double(2.5), .string("s"), .array([.null]), .object(["k": 1])]
        #expect(values.map(\.isNull) == [true, false, false, false, false, false, false])
        #expect(values.map(\.boolValue) == [nil, true, nil, nil, nil, nil, nil])
        #expect(values.map(\.int64Value) == [nil, nil, 7, nil, nil, nil, nil])
        #expect(values.map(\.doubleValue) == [nil, nil, 7.0, 2.5, nil, nil, nil])
        #expect(values.map(\.stringValue) == [nil, nil, nil, nil, "s", nil, nil])
        #expect(values.map(\.arrayValue) == [nil, nil, nil, nil, nil, [.null], nil])
        #expect(values.map(\.objectValue) == [nil, nil, nil, nil, nil, nil, ["k": 1]])
    }

    @Test func integralDoubleIsNotAnInteger() {
        #expect(JSONValue.double(3.0).int64Value == nil)
        #expect(JSONValue.integer(3) != JSONValue.double(3.0))
    }

    @Test func keySubscriptReadsObjectMembersAndIsNilElsewhere() {
        let value: JSONValue = ["name": "Ada", "tags": ["a", "b"]]
        #expect(value["name"] == .string("Ada"))
        #expect(value["tags"]?.arrayValue?.count == 2)
        #expect(value["missing"] == nil)
        #expect(JSONValue.array([]) ["name"] == nil)
        #expect(JSONValue.string("name")["name"] == nil)
    }

    @Test func literalsBuildTheMatchingCases() {
        let value: JSONValue = ["b": true, "i": 1, "d": 1.5, "s": "x", "a": [1, "two"], "n": .null]
        #expect(value == .object(JSONObject([
            ("b", .bool(true)), ("i", .integer(1)), ("d", .double(1.5)), ("s", .string("x")),
            ("a", .array([.integer(1), .string("two")])), ("n", .null),
        ])))
    }

    @Test func settingANewKeyAppendsItAtTheEnd() {
        var object: JSONObject = ["z": 1, "a": 2]
        object["m"] = 3
        #expect(object.keys == ["z", "a", "m"])
        #expect(object.count == 3)
    }

    @Test func settingAnExistingKeyReplacesItInPlace() {
        var object: JSONObject = ["z": 1, "a": 2, "m": 3]
        object["a"] = "new"
        #expect(object.keys == ["z", "a", "m"])
        #expect(object["a"] == .string("new"))
    }

    @Test func settingNilRemovesTheMember() {
        var object: JSONObject = ["z": 1, "a": 2]
        object["z"] = nil
        object["absent"] = nil
        #expect(object.keys == ["a"])
        object["a"] = nil
        #expect(object.isEmpty)
        #expect(JSONObject().isEmpty)
    }

    @Test func iterationYieldsMembersInOrder() {
        let object: JSONObject = ["b": 1, "a": 2, "c": 3]
        let pairs = object.map { "\($0.key)=\($0.value)" }
        #expect(pairs == ["b=1", "a=2", "c=3"])
    }

    @Test func initializerWithARepeatedKeyKeepsFirstPositionAndLastValue() {
        let object = JSONObject([("a", 1), ("b", 2), ("a", 3)])
        #expect(object.keys == ["a", "b"])
        #expect(object["a"] == .integer(3))
    }

    @Test func largeObjectsStayConsistentThroughEdits() {
        var object = JSONObject()
        for index in 0..<100 {
            object["k\(index)"] = .integer(Int64(index))
        }
        for index in stride(from: 0, to: 100, by: 3) {
            object["k\(index)"] = nil
        }
        object["k1"] = "replaced"
        object["extra"] = true
        #expect(object.count == 100 - 34 + 1)
        #expect(object["k0"] == nil)
        #expect(object["k1"] == .string("replaced"))
        #expect(object["k98"] == .integer(98))
        #expect(object["extra"] == .bool(true))
        #expect(object.keys.first == "k1")
        #expect(object.keys.last == "extra")
        for (key, value) in object {
            #expect(object[key] == value)
        }
        // Shrinking back below the index threshold keeps lookups right.
        for key in object.keys.dropFirst(3) {
            object[key] = nil
        }
        #expect(object.keys == ["k1", "k2", "k4"])
        #expect(object["k4"] == .integer(4))
    }

    @Test func objectEqualityRespectsMemberOrder() {
        let ab: JSONObject = ["a": 1, "b": 2]
        let ba: JSONObject = ["b": 2, "a": 1]
        #expect(ab != ba)
        #expect(ab == JSONObject([("a", 1), ("b", 2)]))
        #expect(Set([JSONValue.object(ab), .object(ab), .object(ba)]).count == 2)
    }

    @Test func largeAndSmallObjectsWithTheSameMembersAreEqualAndHashAlike() {
        var built = JSONObject()
        for index in 0..<30 { built["k\(index)"] = .integer(Int64(index)) }
        let parsed = try? JSONValue.parse(JSONValue.object(built).serialized()).objectValue
        #expect(parsed == built)
        #expect(parsed?.hashValue == built.hashValue)
    }

    @Test func descriptionIsTheCompactSerialization() {
        let value: JSONValue = ["a": [1, 2.5, "x"], "b": .null]
        #expect(value.description == #"{"a":[1,2.5,"x"],"b":null}"#)
        let object: JSONObject = ["k": true]
        #expect("\(object)" == #"{"k":true}"#)
    }
}
