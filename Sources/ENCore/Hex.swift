/// Why a hexadecimal string was refused.
public enum HexError: Error, Equatable, CustomStringConvertible {
    case invalidCharacter(Character)
    case oddLength(Int)
    case wrongLength(expectedBytes: Int, actualBytes: Int)

    public var description: String {
        switch self {
        case .invalidCharacter(let character):
            return "'\(character)' is not a hexadecimal digit"
        case .oddLength(let length):
            return "\(length) hexadecimal digits is an odd number; each byte takes two"
        case .wrongLength(let expected, let actual):
            return "expected \(expected) bytes (\(expected * 2) hexadecimal digits), got \(actual) bytes"
        }
    }
}

extension Array where Element == UInt8 {
    /// Decodes hexadecimal digits (either case); with `byteCount`, the result must have that length.
    public init(hex: String, byteCount: Int? = nil) throws(HexError) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { throw .oddLength(digits.count) }
        var bytes = [UInt8]()
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            bytes.append(try hexValue(digits[index]) << 4 | hexValue(digits[index + 1]))
            index += 2
        }
        if let byteCount, bytes.count != byteCount {
            throw .wrongLength(expectedBytes: byteCount, actualBytes: bytes.count)
        }
        self = bytes
    }
}

extension Sequence where Element == UInt8 {
    /// Lower-case hexadecimal, two digits per byte.
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

func hexValue(_ digit: UInt8) throws(HexError) -> UInt8 {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
    default: throw .invalidCharacter(Character(Unicode.Scalar(digit)))
    }
}
