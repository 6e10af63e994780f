import FoundationEssentials

/// A JSON document of any shape, read and written member by member: health cards, JWKS and the
/// servers' answers, whose members are looked up rather than declared. JSONSerialization would
/// do, but it is in full Foundation (ICU); JSONDecoder and JSONEncoder are in FoundationEssentials.
public enum JSONValue: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number without a fraction or exponent that fits Int64.
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// `data` as JSON, or nil when it is not (each caller says what it expected instead).
    public init?(parsing data: Data) {
        guard let value = try? JSONDecoder().decodeUTF8(JSONValue.self, from: data) else { return nil }
        self = value
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // A value of another type is no error here but the next type to try; the last decode
        // throws when none fits.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member `key` of an object; nil for a missing member or when this is no object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    public var string: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    /// An integer or any other number, as Double.
    public var number: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .number(let value): return value
        default: return nil
        }
    }

    /// A number without a fraction that fits Int64.
    public var integer: Int64? {
        guard case .integer(let value) = self else { return nil }
        return value
    }

    public var array: [JSONValue]? {
        guard case .array(let elements) = self else { return nil }
        return elements
    }

    /// The JSON text, compact, with sorted keys and slashes unescaped: the same value gives the same bytes.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
