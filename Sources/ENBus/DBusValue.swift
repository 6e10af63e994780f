/// A D-Bus value of any type, with its signature.
public indirect enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor. A received one is a duplicate that the receiver owns and must close.
    case unixFD(Int32)
    /// An array of values that all have `elementSignature`.
    case array(elementSignature: String, [DBusValue])
    /// An `a{..}` dictionary, in order.
    case dictionary(keySignature: String, valueSignature: String, [DictionaryEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    public struct DictionaryEntry: Hashable, Sendable {
        public var key: DBusValue
        public var value: DBusValue

        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    public var signature: String {
        switch self {
        case .byte: return "y"
        case .boolean: return "b"
        case .int16: return "n"
        case .uint16: return "q"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .unixFD: return "h"
        case .array(let element, _): return "a" + element
        case .dictionary(let key, let value, _): return "a{" + key + value + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        case .variant: return "v"
        }
    }
}

// MARK: Building and reading common shapes

extension DBusValue {
    /// An `a{sv}` dictionary, the usual shape of properties and options.
    public static func properties(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(keySignature: "s", valueSignature: "v",
                    entries.sorted { $0.key < $1.key }.map { DictionaryEntry(.string($0.key), .variant($0.value)) })
    }

    public static func strings(_ values: [String]) -> DBusValue { .array(elementSignature: "s", values.map(DBusValue.string)) }
    public static func bytes(_ values: [UInt8]) -> DBusValue { .array(elementSignature: "y", values.map(DBusValue.byte)) }

    /// The value inside any number of variants.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        switch unwrapped {
        case .string(let value), .objectPath(let value), .signature(let value): return value
        default: return nil
        }
    }

    public var bool: Bool? {
        if case .boolean(let value) = unwrapped { return value }
        return nil
    }

    /// Any integer type, when it fits.
    public var integer: Int64? {
        switch unwrapped {
        case .byte(let value): return Int64(value)
        case .int16(let value): return Int64(value)
        case .uint16(let value): return Int64(value)
        case .int32(let value): return Int64(value)
        case .uint32(let value): return Int64(value)
        case .int64(let value): return value
        case .uint64(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    /// The elements of an array (or the values of a dictionary's entries as structures).
    public var elements: [DBusValue]? {
        if case .array(_, let values) = unwrapped { return values }
        return nil
    }

    /// The bytes of an `ay`.
    public var byteArray: [UInt8]? {
        guard case .array("y", let values) = unwrapped else { return nil }
        return values.compactMap { if case .byte(let byte) = $0 { return byte } else { return nil } }
    }

    /// A dictionary with string keys (`a{sv}`, `a{sa{sv}}`, …), values as they are.
    public var stringKeyed: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var result = [String: DBusValue]()
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value
        }
        return result
    }
}
