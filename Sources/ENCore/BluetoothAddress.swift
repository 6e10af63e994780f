/// A Bluetooth controller's address, such as `00:1A:7D:DA:71:13`: what names a receiver across
/// replugs and reboots, where its name (`hci0`) goes to whichever adapter the kernel finds first.
public struct BluetoothAddress: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The six bytes, the first as written (the most significant) in the high bits.
    public let rawValue: UInt64

    public init?(rawValue: UInt64) {
        guard rawValue >> 48 == 0 else { return nil }
        self.rawValue = rawValue
    }

    /// Reads six hexadecimal bytes separated by colons, in either case, as BlueZ and btmgmt print them.
    public init?(_ text: some StringProtocol) {
        self.init(utf8: text.utf8)
    }

    /// The same from UTF-8 bytes (a JSON line read in place).
    public init?(utf8 text: some Collection<UInt8>) {
        guard text.count == 17 else { return nil }
        var value: UInt64 = 0
        for (offset, character) in text.enumerated() {
            if offset % 3 == 2 {
                guard character == UInt8(ascii: ":") else { return nil }
            } else {
                guard let digit = try? hexValue(character) else { return nil }
                value = value << 4 | UInt64(digit)
            }
        }
        rawValue = value
    }

    /// Upper-case, as BlueZ prints it.
    public var description: String {
        (0..<6).map { shift in
            let byte = UInt8(truncatingIfNeeded: rawValue >> (40 - 8 * shift))
            return String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0x0F, radix: 16, uppercase: true)
        }.joined(separator: ":")
    }

    public static func < (left: Self, right: Self) -> Bool { left.rawValue < right.rawValue }

    /// What the configuration's and the tools' messages show as an example.
    public static let example = "00:1A:7D:DA:71:13"
}
