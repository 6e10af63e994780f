/// Sixteen bytes held as two words, so that keys and identifiers compare, hash and copy
/// without allocating. Byte 0 is the most significant byte of `high`.
public struct Bytes16: Hashable, Sendable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Reads 16 bytes from `buffer` at `offset`.
    public init(_ buffer: UnsafeRawBufferPointer, offset: Int = 0) {
        precondition(offset >= 0 && offset + 16 <= buffer.count, "Bytes16 needs 16 bytes")
        high = UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        low = UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
    }

    /// Sixteen bytes, or nil for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        self = Array(bytes).withUnsafeBytes { Bytes16($0) }
    }

    public init(hex: String) throws(HexError) {
        let bytes = try [UInt8](hex: hex, byteCount: 16)
        self = bytes.withUnsafeBytes { Bytes16($0) }
    }

    public static let zero = Bytes16(high: 0, low: 0)

    /// Calls `body` with the 16 bytes in order.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var words = (high.bigEndian, low.bigEndian)
        return try Swift.withUnsafeBytes(of: &words, body)
    }

    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
    public var hex: String { bytes.hexString }
    /// Never the key material itself: a `Bytes16` may be a TEK, and logs must not carry one.
    public var description: String { "Bytes16(…)" }
}

/// A Temporary Exposure Key's 16 random bytes.
public typealias TemporaryExposureKeyData = Bytes16
/// A Rolling Proximity Identifier: the 16 bytes broadcast for one interval.
public typealias RollingProximityIdentifier = Bytes16
