import ENCore
import Foundation
import Testing

/// JSONValue stands in for JSONSerialization where enctl and ENDiagnosis read and write JSON of
/// no fixed shape.
@Suite struct JSONValueTests {
    @Test func everyKindOfValueIsReadAndLookedUp() throws {
        let value = try #require(JSONValue(parsing: Data(#"{"a": [1, 2.5, 1.5e-1, true, null, "x"], "b": {"c": "d"}, "big": 1e300}"#.utf8)))
        #expect(value["a"]?.array == [.integer(1), .number(2.5), .number(0.15), .bool(true), .null, .string("x")])
        #expect(value["b"]?["c"]?.string == "d")
        #expect(value["a"]?.array?.first?.number == 1 && value["big"]?.number == 1e300)
        #expect(value["missing"] == nil && value["b"]?["c"]?["deeper"] == nil && value["a"]?.string == nil)
        #expect(JSONValue(parsing: Data("{not json".utf8)) == nil)
    }

    @Test func itIsWrittenCompactWithSortedKeysAndUnescapedSlashes() throws {
        let value = JSONValue.object(["z": .integer(2_700_000), "a": .string("http://x/y"), "m": .array([.bool(false), .null])])
        #expect(String(decoding: try value.encoded(), as: UTF8.self) == #"{"a":"http://x/y","m":[false,null],"z":2700000}"#)
        #expect(JSONValue(parsing: try value.encoded()) == value)
    }

    @Test func whitespaceIsTrimmedAtBothEndsOnly() {
        #expect(" \t a b \r\n".trimmingWhitespace() == "a b")
        #expect(" \n ".trimmingWhitespace() == "" && "x".trimmingWhitespace() == "x")
    }
}
