import CENZlib
import FoundationEssentials
import Glibc

/// Where a zip archive's bytes are: in memory (`Data`), or in a file read a piece at a time.
public protocol ZipSource: Sendable {
    var size: UInt64 { get }
    /// Fills `buffer` with the bytes from `offset` on, which the caller keeps within `size`;
    /// a source that cannot (a read error, a file cut short meanwhile) throws `unreadable`.
    func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws(ZipArchive.Failure)
}

extension Data: ZipSource {
    public var size: UInt64 { UInt64(count) }

    public func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws(ZipArchive.Failure) {
        let start = startIndex + Int(offset)
        buffer.copyBytes(from: self[start..<start + buffer.count])
    }
}

/// A zip archive from an untrusted source, read from memory or from a file in bounded pieces.
///
/// Key files come from servers and callers the daemon does not trust, so every offset and size
/// the archive declares is checked against the bytes before it is used, and any inconsistency is
/// an error naming it, never a trap. Only what key files need is supported: one disk, no ZIP64,
/// no encryption, stored or deflated entries. (ZIPFoundation's in-memory reader trapped on an
/// offset past the end, which took the daemon down. ZipWriter writes the archives we make.)
///
/// The archive's structure is read when it is opened, through a window of at most
/// `ByteReader.window` bytes; an entry's bytes only by `EntryReader`, a chunk at a time.
public struct ZipArchive: Sendable {
    public struct Entry: Sendable, Equatable {
        public let name: String
        /// 0 stored, 8 deflated; anything else is refused on extraction.
        public let method: UInt16
        public let compressedSize: UInt64
        public let uncompressedSize: UInt64
        public let crc32: UInt32
        let encrypted: Bool
        /// The compressed bytes, as offsets into the archive.
        let data: Range<UInt64>
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case unsupported(String)
        case tooManyEntries(count: Int, limit: Int)
        case duplicateEntry(String)
        case corruptEntry(name: String, reason: String)
        case entryTooLarge(name: String, declaredBytes: UInt64, limit: Int)
        /// The source could not give its bytes (a read error, or a file that changed meanwhile).
        case unreadable(String)

        public var description: String {
            switch self {
            case .malformed(let reason): return reason
            case .unsupported(let what): return "\(what) is not supported in a key file"
            case .tooManyEntries(let count, let limit): return "the archive has \(count) entries, more than the \(limit) a key file may have"
            case .duplicateEntry(let name): return "the archive has \(name) twice"
            case .corruptEntry(let name, let reason): return "\(name) is damaged: \(reason)"
            case .entryTooLarge(let name, let declared, let limit): return "\(name) declares \(declared) bytes, more than the limit of \(limit)"
            case .unreadable(let reason): return reason
            }
        }
    }

    public let entries: [Entry]
    private let source: any ZipSource

    public init(_ source: some ZipSource, maximumEntries: Int) throws(Failure) {
        self.source = source
        let reader = ByteReader(source)
        let end = try Self.endOfCentralDirectory(reader)
        let diskNumber = try reader.uint16(end + 4)!, directoryDisk = try reader.uint16(end + 6)!
        let entriesOnDisk = try reader.uint16(end + 8)!, entryCount = try reader.uint16(end + 10)!
        let directorySize = UInt64(try reader.uint32(end + 12)!), directoryOffset = UInt64(try reader.uint32(end + 16)!)
        if entryCount == 0xFFFF || directorySize == 0xFFFF_FFFF || directoryOffset == 0xFFFF_FFFF {
            throw .unsupported("ZIP64")
        }
        guard diskNumber == 0, directoryDisk == 0, entriesOnDisk == entryCount else { throw .unsupported("an archive split over several disks") }
        guard Int(entryCount) <= maximumEntries else { throw .tooManyEntries(count: Int(entryCount), limit: maximumEntries) }
        guard directoryOffset + directorySize <= end else {
            throw .malformed("the central directory (\(directorySize) bytes at \(directoryOffset)) lies outside the archive")
        }
        var entries = [Entry](), names = Set<String>()
        var position = directoryOffset
        let directoryEnd = directoryOffset + directorySize
        for index in 0..<Int(entryCount) {
            let entry = try Self.centralEntry(at: &position, end: directoryEnd, index: index, reader: reader, dataEnd: directoryOffset)
            guard names.insert(entry.name).inserted else { throw .duplicateEntry(entry.name) }
            entries.append(entry)
        }
        self.entries = entries
    }

    public subscript(name: String) -> Entry? { entries.first { $0.name == name } }

    /// The entry's bytes, inflated and checked against its declared size and CRC-32. An entry
    /// declaring more than `limit` bytes is refused before inflating.
    public func extract(_ entry: Entry, limit: Int) throws(Failure) -> Data {
        var reader = try self.reader(for: entry, limit: limit)
        var output = Data(capacity: Int(entry.uncompressedSize))
        var chunk = [UInt8](repeating: 0, count: EntryReader.chunkSize)
        while true {
            let count = try chunk.withMutableBytes { buffer throws(Failure) in try reader.read(into: buffer) }
            if count == 0 { return output }
            output.append(contentsOf: chunk[..<count])
        }
    }

    /// A reader of the entry's bytes, a chunk at a time, checked as `extract` checks them; an
    /// entry declaring more than `limit` bytes, encrypted or of another method is refused now.
    public func reader(for entry: Entry, limit: Int, chunkSize: Int = EntryReader.chunkSize) throws(Failure) -> EntryReader {
        guard entry.uncompressedSize <= UInt64(limit) else {
            throw .entryTooLarge(name: entry.name, declaredBytes: entry.uncompressedSize, limit: limit)
        }
        guard !entry.encrypted else { throw .unsupported("an encrypted entry (\(entry.name))") }
        switch entry.method {
        case 0:
            guard entry.compressedSize == entry.uncompressedSize else {
                throw .corruptEntry(name: entry.name, reason: "it is stored with \(entry.compressedSize) bytes but declares \(entry.uncompressedSize)")
            }
            return EntryReader(entry: entry, source: source, inflater: nil, chunkSize: chunkSize)
        case 8:
            do { return EntryReader(entry: entry, source: source, inflater: try RawDeflate.Inflater(), chunkSize: chunkSize) } catch {
                throw .corruptEntry(name: entry.name, reason: "its DEFLATE data is corrupt or cut short")
            }
        default:
            throw .unsupported("compression method \(entry.method) (\(entry.name))")
        }
    }

    /// An entry's bytes as they are read and inflated: at most `chunkSize` compressed bytes held
    /// at a time (and zlib's window), the inflated bytes counted against the declared size and
    /// their CRC-32 checked at the end, before the last read returns 0. Not Sendable: one thread
    /// reads it at a time.
    public struct EntryReader {
        public static let chunkSize = 1 << 16

        let entry: Entry
        private let source: any ZipSource
        private let inflater: RawDeflate.Inflater?
        /// Compressed bytes read but not yet inflated: `pending` of `input`.
        private var input: [UInt8]
        private var pending: Range<Int> = 0..<0
        /// Where the next compressed bytes are read from.
        private var next: UInt64
        private var produced: UInt64 = 0
        private var crc: uLong = 0
        private var ended = false

        init(entry: Entry, source: any ZipSource, inflater: RawDeflate.Inflater?, chunkSize: Int) {
            (self.entry, self.source, self.inflater) = (entry, source, inflater)
            input = [UInt8](repeating: 0, count: max(1, chunkSize))
            next = entry.data.lowerBound
        }

        /// The bytes of `input` this reader holds: at most its chunk size, whatever the entry's.
        public var bufferCapacity: Int { input.capacity }

        /// Fills `buffer` with the entry's next bytes and returns how many; 0 at the end, once the
        /// entry's size and CRC-32 checked out.
        public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(Failure) -> Int {
            precondition(buffer.count > 0, "read into an empty buffer")
            while !ended {
                if pending.isEmpty && next < entry.data.upperBound {
                    let count = Int(min(UInt64(input.count), entry.data.upperBound - next))
                    let source = source, at = next
                    try input.withMutableBytes { bytes throws(Failure) in
                        try source.read(at: at, into: UnsafeMutableRawBufferPointer(rebasing: bytes[..<count]))
                    }
                    next += UInt64(count)
                    pending = 0..<count
                }
                let inputEnds = next == entry.data.upperBound
                let count: Int
                if let inflater {
                    let step: (consumed: Int, produced: Int, finished: Bool), unread = pending
                    do {
                        step = try input.withBytes { bytes throws(RawDeflate.Failure) in
                            try inflater.inflate(UnsafeRawBufferPointer(rebasing: bytes[unread]), into: buffer, inputEnds: inputEnds)
                        }
                    } catch {
                        throw .corruptEntry(name: entry.name, reason: "its DEFLATE data is corrupt or cut short")
                    }
                    pending = pending.lowerBound + step.consumed..<pending.upperBound
                    count = step.produced
                    if step.finished { ended = true }
                } else {
                    count = min(pending.count, buffer.count)
                    input.withUnsafeBytes { bytes in buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[pending.prefix(count)])) }
                    pending = pending.lowerBound + count..<pending.upperBound
                    if pending.isEmpty && inputEnds { ended = true }
                }
                try take(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                if count > 0 { return count }
            }
            return try finish()
        }

        private mutating func take(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
            produced += UInt64(bytes.count)
            guard produced <= entry.uncompressedSize else {
                throw .corruptEntry(name: entry.name, reason: "it inflates to more than the \(entry.uncompressedSize) bytes it declares")
            }
            if let base = bytes.baseAddress, bytes.count > 0 {
                crc = CENZlib.crc32(crc, base.assumingMemoryBound(to: Bytef.self), uInt(bytes.count))
            }
        }

        private func finish() throws(Failure) -> Int {
            guard produced == entry.uncompressedSize else {
                throw .corruptEntry(name: entry.name, reason: "it inflates to \(produced) bytes, not the \(entry.uncompressedSize) it declares")
            }
            let crc = UInt32(truncatingIfNeeded: crc)
            guard crc == entry.crc32 else {
                throw .corruptEntry(name: entry.name, reason: "its CRC-32 is \(hex(crc)), not the \(hex(entry.crc32)) it declares")
            }
            return 0
        }
    }

    /// The end-of-central-directory record: the last one in the final 64 KiB + 22 bytes.
    private static func endOfCentralDirectory(_ reader: ByteReader) throws(Failure) -> UInt64 {
        let size = reader.count
        guard size >= 22 else { throw .malformed("\(size) bytes are too few for a zip archive") }
        var candidate = size - 22
        let lowest = size >= 22 + 0xFFFF ? size - 22 - 0xFFFF : 0
        while true {
            if try reader.uint32(candidate) == 0x0605_4B50, let commentLength = try reader.uint16(candidate + 20),
               candidate + 22 + UInt64(commentLength) <= size {
                return candidate
            }
            guard candidate > lowest else { throw .malformed("no end of central directory record: not a zip archive, or cut short") }
            candidate -= 1
        }
    }

    /// One central directory record at `position` (advanced past it), checked against its local header.
    private static func centralEntry(at position: inout UInt64, end: UInt64, index: Int, reader: ByteReader,
                                     dataEnd: UInt64) throws(Failure) -> Entry {
        let record = position
        guard record + 46 <= end, try reader.uint32(record) == 0x0201_4B50 else {
            throw .malformed("central directory record \(index + 1) at \(record) is missing or cut short")
        }
        let flags = try reader.uint16(record + 8)!, method = try reader.uint16(record + 10)!, crc = try reader.uint32(record + 16)!
        let compressed = UInt64(try reader.uint32(record + 20)!), uncompressed = UInt64(try reader.uint32(record + 24)!)
        let nameLength = UInt64(try reader.uint16(record + 28)!), extraLength = UInt64(try reader.uint16(record + 30)!)
        let commentLength = UInt64(try reader.uint16(record + 32)!), localOffset = UInt64(try reader.uint32(record + 42)!)
        position = record + 46 + nameLength + extraLength + commentLength
        guard position <= end else { throw .malformed("central directory record \(index + 1) runs past the directory's end") }
        guard compressed != 0xFFFF_FFFF, uncompressed != 0xFFFF_FFFF, localOffset != 0xFFFF_FFFF else { throw .unsupported("ZIP64") }
        let name = try reader.text(record + 46, length: nameLength)

        // The local header repeats the name; the data follows it and must end before the directory.
        guard localOffset + 30 <= dataEnd, try reader.uint32(localOffset) == 0x0403_4B50 else {
            throw .malformed("\(name): no local header at \(localOffset)")
        }
        let localNameLength = UInt64(try reader.uint16(localOffset + 26)!), localExtraLength = UInt64(try reader.uint16(localOffset + 28)!)
        let dataStart = localOffset + 30 + localNameLength + localExtraLength
        guard dataStart + compressed <= dataEnd else {
            throw .malformed("\(name): its \(compressed) bytes at \(dataStart) run past the entries' end (\(dataEnd))")
        }
        guard try reader.text(localOffset + 30, length: localNameLength) == name else {
            throw .malformed("\(name): the local header names another entry")
        }
        return Entry(name: name, method: method, compressedSize: compressed, uncompressedSize: uncompressed, crc32: crc,
                     encrypted: flags & 1 != 0, data: dataStart..<(dataStart + compressed))
    }
}

/// Little-endian fields at offsets that may lie anywhere: nil when outside the bytes. Read
/// through a window of the source, so that walking the structure backwards or forwards costs a
/// read per window, and memory the window alone.
private final class ByteReader {
    /// The end record is searched for in the last 64 KiB + 22 bytes: one window holds them.
    static let window = 1 << 17

    let source: any ZipSource
    var count: UInt64 { source.size }
    private var buffer = [UInt8]()
    private var bufferStart: UInt64 = 0

    init(_ source: any ZipSource) { self.source = source }

    /// The `length` bytes at `offset`, which lie inside the source, from the window (moved there when they do not).
    private func bytes<T>(_ offset: UInt64, _ length: Int, _ body: (UnsafeRawBufferPointer) -> T) throws(ZipArchive.Failure) -> T {
        if length > Self.window {
            var bytes = [UInt8](repeating: 0, count: length)
            try bytes.withMutableBytes { buffer throws(ZipArchive.Failure) in try source.read(at: offset, into: buffer) }
            return bytes.withUnsafeBytes(body)
        }
        if offset < bufferStart || offset + UInt64(length) > bufferStart + UInt64(buffer.count) {
            // Centred on the offset, as the end record is searched backwards and the directory forwards.
            let start = min(offset > UInt64(Self.window / 2) ? offset - UInt64(Self.window / 2) : 0, count - min(count, UInt64(Self.window)))
            let size = Int(min(UInt64(Self.window), count - start))
            buffer = [UInt8](repeating: 0, count: size)
            try buffer.withMutableBytes { window throws(ZipArchive.Failure) in try source.read(at: start, into: window) }
            bufferStart = start
        }
        let at = Int(offset - bufferStart)
        return buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[at..<at + length])) }
    }

    func uint16(_ offset: UInt64) throws(ZipArchive.Failure) -> UInt16? {
        guard offset <= count, count - offset >= 2 else { return nil }
        return try bytes(offset, 2) { UInt16($0[0]) | UInt16($0[1]) << 8 }
    }

    func uint32(_ offset: UInt64) throws(ZipArchive.Failure) -> UInt32? {
        guard let low = try uint16(offset), let high = try uint16(offset + 2) else { return nil }
        return UInt32(low) | UInt32(high) << 16
    }

    /// Only called for ranges already checked to lie inside the bytes.
    func text(_ offset: UInt64, length: UInt64) throws(ZipArchive.Failure) -> String {
        try bytes(offset, Int(length)) { String(decoding: $0, as: UTF8.self) }
    }
}

private func hex(_ value: UInt32) -> String { "0x" + String(value, radix: 16, uppercase: true) }
