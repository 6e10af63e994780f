import FoundationEssentials

/// Why bytes are not the protobuf message they should be: what is wrong, and where.
package struct ProtobufError: Error, Equatable, CustomStringConvertible {
    package let reason: String
    /// From the start of the buffer read: for a key file's messages, of export.bin (header
    /// included) or export.sig.
    package let offset: Int
    /// Set when the message went on past the bytes a `ProtobufWire` reading a piece of it had
    /// (`isLastPiece` false): not an error yet, but a field to read again with more bytes.
    package let unfinished: Unfinished?

    /// What a field cut off by the end of a piece is known to be so far.
    package struct Unfinished: Equatable {
        /// The field's number, once its tag was read.
        package let field: Int?
        /// Where a length-delimited field ends, once its length was read; where that length is,
        /// and where the field's contents start.
        package let end: Int?
        package var lengthOffset: Int? = nil
        package var contentStart: Int? = nil
    }

    package init(_ reason: String, at offset: Int, unfinished: Unfinished? = nil) {
        self.reason = reason
        self.offset = offset
        self.unfinished = unfinished
    }

    /// The same error with its offset counted from `origin` on: for a piece that starts there.
    package func moved(by origin: Int) -> ProtobufError { ProtobufError(reason, at: offset + origin, unfinished: unfinished) }

    package var description: String { "\(reason) (at byte \(offset))" }
}

/// One field of a message as it is on the wire: its number, where its tag starts, its value.
package struct ProtobufField {
    package enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        /// Length-delimited: strings, bytes, messages, packed values. Where the contents are.
        case bytes(Range<Int>)
        /// A (deprecated) group: where its fields are, between the start and end tags.
        case group(Range<Int>)

        var wireTypeName: String {
            switch self {
            case .varint: return "varint"
            case .fixed64: return "fixed64"
            case .fixed32: return "fixed32"
            case .bytes: return "length-delimited"
            case .group: return "group"
            }
        }
    }

    package let number: Int
    package let offset: Int
    package let value: Value
}

/// Reads the fields of a protobuf message (the encoding of protobuf.dev/programming-guides/encoding)
/// one at a time, in place and without allocating, so that a million repeated keys can be
/// visited in bounded memory. Every malformation is refused: a truncated varint or field, a
/// varint beyond 64 bits, a field number outside 1...2^29-1, wire types 6 and 7, and groups
/// whose end tag is missing or belongs to another field.
package struct ProtobufWire {
    /// What protobuf allows.
    static let maximumFieldNumber: UInt64 = (1 << 29) - 1
    /// Groups nested deeper are refused rather than followed (SwiftProtobuf's limit too).
    static let maximumGroupDepth = 100

    private let bytes: UnsafeRawBufferPointer
    private let end: Int
    /// Whether the message ends where `end` is; otherwise a field cut off there throws an error
    /// that says it is `unfinished`, and the reader of a streamed message reads it again with more.
    private let isLastPiece: Bool
    /// Where the next field starts.
    package private(set) var offset: Int
    /// The number of the field being read, for an unfinished one.
    private var fieldNumber: Int?

    /// Reads the message that fills `range` of `bytes`; offsets stay those of `bytes`. With
    /// `isLastPiece` false, the range is a piece of a message that goes on after it.
    package init(_ bytes: UnsafeRawBufferPointer, in range: Range<Int>, isLastPiece: Bool = true) {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "the range \(range) is outside the buffer")
        self.bytes = bytes
        self.offset = range.lowerBound
        self.end = range.upperBound
        self.isLastPiece = isLastPiece
    }

    /// `error` for a field cut off by the end of the bytes: as it is in the last piece, an
    /// unfinished field in any other.
    private func cutOff(_ error: @autoclosure () -> ProtobufError, fieldEnd: Int? = nil, lengthOffset: Int? = nil) -> ProtobufError {
        if isLastPiece { return error() }
        return ProtobufError("the message goes on after this piece", at: offset,
                             unfinished: .init(field: fieldNumber, end: fieldEnd, lengthOffset: lengthOffset, contentStart: fieldEnd.map { _ in offset }))
    }

    package init(_ bytes: UnsafeRawBufferPointer) {
        self.init(bytes, in: 0..<bytes.count)
    }

    /// The next field, or nil at the end of the message.
    package mutating func next() throws(ProtobufError) -> ProtobufField? {
        offset < end ? try field(groupDepth: 0) : nil
    }

    private mutating func field(groupDepth: Int) throws(ProtobufError) -> ProtobufField {
        let start = offset
        if groupDepth == 0 { fieldNumber = nil }
        let tag = try varint(of: "a field tag")
        let number = tag >> 3
        guard number > 0, number <= Self.maximumFieldNumber else {
            throw ProtobufError("field number \(number) is outside 1...\(Self.maximumFieldNumber)", at: start)
        }
        let field = Int(number)
        if groupDepth == 0 { fieldNumber = field }
        let value: ProtobufField.Value
        switch tag & 7 {
        case 0:
            value = .varint(try varint(of: "field \(field)"))
        case 1:
            value = .fixed64(try fixed(UInt64.self, of: field))
        case 2:
            let lengthOffset = offset
            let length = try varint(of: "the length of field \(field)")
            guard length <= UInt64(end - offset) else {
                throw cutOff(ProtobufError("field \(field) claims \(length) bytes but only \(end - offset) remain", at: lengthOffset),
                             fieldEnd: length <= UInt64(Int.max - offset) ? offset + Int(length) : nil, lengthOffset: lengthOffset)
            }
            value = .bytes(offset..<offset + Int(length))
            offset += Int(length)
        case 3:
            value = .group(try groupContents(of: field, startedAt: start, depth: groupDepth + 1))
        case 4:
            throw ProtobufError("an end-group tag of field \(field) closes no group", at: start)
        case 5:
            value = .fixed32(try fixed(UInt32.self, of: field))
        default:
            throw ProtobufError("field \(field) has wire type \(tag & 7), which does not exist", at: start)
        }
        return ProtobufField(number: field, offset: start, value: value)
    }

    /// Skips the fields of a group up to its end tag, and returns where they are.
    private mutating func groupContents(of field: Int, startedAt start: Int, depth: Int) throws(ProtobufError) -> Range<Int> {
        guard depth <= Self.maximumGroupDepth else {
            throw ProtobufError("groups nest deeper than \(Self.maximumGroupDepth)", at: start)
        }
        let contents = offset
        while offset < end {
            let tagOffset = offset
            let tag = try varint(of: "a field tag")
            if tag & 7 == 4 {
                guard tag >> 3 == UInt64(field) else {
                    throw ProtobufError("the group of field \(field) is closed by an end-group tag of field \(tag >> 3)", at: tagOffset)
                }
                return contents..<tagOffset
            }
            offset = tagOffset
            _ = try self.field(groupDepth: depth)
        }
        throw cutOff(ProtobufError("the group of field \(field) has no end-group tag", at: start))
    }

    /// A base-128 varint: seven bits a byte, least significant first, at most ten bytes for 64 bits.
    /// `what` is only made for an error: a string built per field was a tenth of a detection's time.
    private mutating func varint(of what: @autoclosure () -> String) throws(ProtobufError) -> UInt64 {
        let start = offset
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < end else { throw cutOff(ProtobufError("\(what()) is a varint cut off by the end of the message", at: start)) }
            let byte = bytes[offset]
            offset += 1
            // The tenth byte holds bit 63 alone.
            guard shift < 63 || byte <= 1 else { throw ProtobufError("\(what()) is a varint longer than 64 bits", at: start) }
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    private mutating func fixed<T: FixedWidthInteger>(_: T.Type, of field: Int) throws(ProtobufError) -> T {
        let size = MemoryLayout<T>.size
        guard end - offset >= size else {
            throw cutOff(ProtobufError("field \(field) needs \(size) bytes but only \(end - offset) remain", at: offset))
        }
        defer { offset += size }
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

/// A message of export.proto that can be read from the wire.
package protocol ProtobufDecodable {
    init()
    /// Takes in one field of the message: a known field replaces an earlier value (a message
    /// merges into it) or adds to a repeated one; an unknown field is left (skipped).
    mutating func read(_ field: ProtobufField, in bytes: UnsafeRawBufferPointer) throws(ProtobufError)
}

extension ProtobufDecodable {
    /// The message that fills `range` of `bytes`.
    package init(_ bytes: UnsafeRawBufferPointer, in range: Range<Int>) throws(ProtobufError) {
        self.init()
        try merge(bytes, in: range)
    }

    package init(serializedBytes: some ContiguousBytes) throws(ProtobufError) {
        var decoded: Result<Self, ProtobufError> = .success(Self())
        serializedBytes.withUnsafeBytes { bytes in
            do throws(ProtobufError) { decoded = .success(try Self(bytes, in: 0..<bytes.count)) } catch { decoded = .failure(error) }
        }
        self = try decoded.get()
    }

    /// Reads a message's fields over this one's, as protobuf merges a message that occurs twice.
    mutating func merge(_ bytes: UnsafeRawBufferPointer, in range: Range<Int>) throws(ProtobufError) {
        var wire = ProtobufWire(bytes, in: range)
        while let field = try wire.next() { try read(field, in: bytes) }
    }
}

/// A field's value as the type its message declares; another wire type is refused, naming the field.
extension ProtobufField {
    package func uint64(_ name: String) throws(ProtobufError) -> UInt64 {
        guard case .varint(let value) = value else { throw wrongWireType(name, expected: "varint") }
        return value
    }

    /// int32 (and enums): protobuf writes a negative one as ten bytes; the low 32 bits count.
    package func int32(_ name: String) throws(ProtobufError) -> Int32 {
        Int32(truncatingIfNeeded: try uint64(name))
    }

    /// sint32: ZigZag, so that small negative numbers take few bytes.
    package func sint32(_ name: String) throws(ProtobufError) -> Int32 {
        Self.sint32(zigZag: try uint64(name))
    }

    /// 0, 1, 2, 3, 4 stand for 0, -1, 1, -2, 2; of a longer varint, the low 32 bits count.
    package static func sint32(zigZag varint: UInt64) -> Int32 {
        let zigZag = UInt32(truncatingIfNeeded: varint)
        return Int32(bitPattern: zigZag >> 1) ^ -Int32(bitPattern: zigZag & 1)
    }

    package func fixed64(_ name: String) throws(ProtobufError) -> UInt64 {
        guard case .fixed64(let value) = value else { throw wrongWireType(name, expected: "fixed64") }
        return value
    }

    /// Where a bytes, string or message field's contents are.
    package func contents(_ name: String) throws(ProtobufError) -> Range<Int> {
        guard case .bytes(let range) = value else { throw wrongWireType(name, expected: "length-delimited") }
        return range
    }

    package func bytes(_ name: String, in message: UnsafeRawBufferPointer) throws(ProtobufError) -> [UInt8] {
        Array(message[try contents(name)])
    }

    package func string(_ name: String, in message: UnsafeRawBufferPointer) throws(ProtobufError) -> String {
        guard let text = String(validating: message[try contents(name)], as: UTF8.self) else {
            throw ProtobufError("\(name) (field \(number)) is not UTF-8", at: offset)
        }
        return text
    }

    /// A message field read over `earlier` (protobuf merges a message field that occurs twice).
    package func message<Message: ProtobufDecodable>(_ name: String, in bytes: UnsafeRawBufferPointer,
                                                      over earlier: Message = Message()) throws(ProtobufError) -> Message {
        var message = earlier
        try message.merge(bytes, in: try contents(name))
        return message
    }

    private func wrongWireType(_ name: String, expected: String) -> ProtobufError {
        ProtobufError("\(name) (field \(number)) is \(value.wireTypeName), not \(expected)", at: offset)
    }
}
