import ENKeyFiles

/// A message that can be written in the protobuf encoding.
package protocol ProtobufEncodable {
    /// Writes the fields that are present, in field number order (as protobuf's own encoders do,
    /// so that the bytes are those other implementations write).
    func write(to writer: inout ProtobufWriter)
}

extension ProtobufEncodable {
    package func serializedBytes() -> [UInt8] {
        var writer = ProtobufWriter()
        write(to: &writer)
        return writer.bytes
    }
}

/// Writes the protobuf encoding (protobuf.dev/programming-guides/encoding) of optional and
/// repeated fields: a nil field is absent, which proto2 tells apart from its default.
package struct ProtobufWriter {
    package private(set) var bytes: [UInt8] = []

    private enum WireType: UInt64 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2
    }

    package mutating func write(_ field: Int, uint64 value: UInt64?) {
        guard let value else { return }
        tag(field, .varint)
        varint(value)
    }

    /// A negative int32 takes ten bytes: protobuf sign-extends it to 64 bits, so that it reads
    /// the same as an int64.
    package mutating func write(_ field: Int, int32 value: Int32?) {
        write(field, uint64: value.map { UInt64(bitPattern: Int64($0)) })
    }

    package mutating func write(_ field: Int, sint32 value: Int32?) {
        write(field, uint64: value.map { UInt64(UInt32(bitPattern: ($0 << 1) ^ ($0 >> 31))) })
    }

    package mutating func write(_ field: Int, fixed64 value: UInt64?) {
        guard let value else { return }
        tag(field, .fixed64)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func write(_ field: Int, bytes value: [UInt8]?) {
        guard let value else { return }
        tag(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    package mutating func write(_ field: Int, string value: String?) {
        write(field, bytes: value.map { Array($0.utf8) })
    }

    package mutating func write(_ field: Int, message value: (some ProtobufEncodable)?) {
        write(field, bytes: value?.serializedBytes())
    }

    package mutating func write(_ field: Int, messages values: [some ProtobufEncodable]) {
        for value in values { write(field, message: value) }
    }

    private mutating func tag(_ field: Int, _ wireType: WireType) {
        varint(UInt64(field) << 3 | wireType.rawValue)
    }

    /// Seven bits a byte, least significant first; the high bit says another byte follows.
    private mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}
