import Foundation

/// Walks the top-level fields of a protobuf message without decoding it whole, so that a
/// million repeated keys can be visited one at a time in bounded memory.
struct ProtobufWire {
    enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        case bytes(Range<Int>)
    }

    struct Malformed: Error {
        let reason: String
    }

    private let bytes: UnsafeRawBufferPointer
    /// Where the next field starts.
    private(set) var offset: Int

    init(_ bytes: UnsafeRawBufferPointer, from offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    /// The next field's number and value, or nil at the end of the message.
    mutating func next() throws(Malformed) -> (field: Int, value: Value)? {
        guard offset < bytes.count else { return nil }
        let tag = try varint()
        let field = Int(tag >> 3)
        guard field > 0, field <= 536_870_911 else { throw Malformed(reason: "field number \(tag >> 3) at byte \(offset)") }
        switch tag & 7 {
        case 0:
            return (field, .varint(try varint()))
        case 1:
            return (field, .fixed64(UInt64(littleEndian: try fixed(UInt64.self))))
        case 2:
            let length = try varint()
            guard length <= UInt64(bytes.count - offset) else {
                throw Malformed(reason: "field \(field) claims \(length) bytes but only \(bytes.count - offset) remain")
            }
            let range = offset..<offset + Int(length)
            offset = range.upperBound
            return (field, .bytes(range))
        case 5:
            return (field, .fixed32(UInt32(littleEndian: try fixed(UInt32.self))))
        default:
            throw Malformed(reason: "unsupported wire type \(tag & 7) for field \(field)")
        }
    }

    private mutating func varint() throws(Malformed) -> UInt64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 70, by: 7) {
            guard offset < bytes.count else { throw Malformed(reason: "truncated varint") }
            let byte = bytes[offset]
            offset += 1
            guard shift < 63 || byte <= 1 else { throw Malformed(reason: "varint longer than 64 bits") }
            value |= UInt64(byte & 0x7f) << UInt64(shift)
            if byte & 0x80 == 0 { return value }
        }
        throw Malformed(reason: "varint longer than 10 bytes")
    }

    private mutating func fixed<T: FixedWidthInteger>(_: T.Type) throws(Malformed) -> T {
        let size = MemoryLayout<T>.size
        guard bytes.count - offset >= size else { throw Malformed(reason: "truncated fixed-width field") }
        defer { offset += size }
        return bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
    }
}
