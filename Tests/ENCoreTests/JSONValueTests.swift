import ENCore
import Foundation
import TestSupport
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

    /// Swift 6.0's JSONDecoder stops the process on such input instead of throwing.
    @Test func bytesThatAreNotUTF8AreRefusedNotFatal() throws {
        #expect(JSONValue(parsing: Data([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D])) == nil)
        #expect(JSONValue(parsing: Data([0x22, 0xC3, 0x28, 0x22])) == nil)
        let line = Data(#"{"rpi": "00112233445566778899aabbccddeeff", "aem": "a1b2c3d4", "rssi": -60, "time": 1, "x": "\#u{FF}"}"#.utf8)
        let broken = line.map { $0 == 0xC3 ? 0xFF : $0 }
        #expect(throws: Never.self) { try Sighting.decodedJSONLine(line, place: "line 1") }
        _ = expectError(SightingsFileError.self) { try Sighting.decodedJSONLine(Data(broken), place: "line 1") }
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
