import FoundationEssentials
import Glibc

/// A zip archive from an untrusted source, read from memory.
///
/// Key files come from servers and callers the daemon does not trust, so every offset and size
/// the archive declares is checked against the bytes before it is used, and any inconsistency is
/// an error naming it, never a trap. Only what key files need is supported: one disk, no ZIP64,
/// no encryption, stored or deflated entries. (ZIPFoundation's in-memory reader trapped on an
/// offset past the end, which took the daemon down. ZipWriter writes the archives we make.)
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

        public var description: String {
            switch self {
            case .malformed(let reason): return reason
            case .unsupported(let what): return "\(what) is not supported in a key file"
            case .tooManyEntries(let count, let limit): return "the archive has \(count) entries, more than the \(limit) a key file may have"
            case .duplicateEntry(let name): return "the archive has \(name) twice"
            case .corruptEntry(let name, let reason): return "\(name) is damaged: \(reason)"
            case .entryTooLarge(let name, let declared, let limit): return "\(name) declares \(declared) bytes, more than the limit of \(limit)"
            }
        }
    }

    public let entries: [Entry]
    private let bytes: Data

    public init(_ data: Data, maximumEntries: Int) throws(Failure) {
        // Offsets below are from 0.
        bytes = data.startIndex == 0 ? data : Data(data)
        let reader = ByteReader(bytes)
        let end = try Self.endOfCentralDirectory(reader)
        let diskNumber = reader.uint16(end + 4)!, directoryDisk = reader.uint16(end + 6)!
        let entriesOnDisk = reader.uint16(end + 8)!, entryCount = reader.uint16(end + 10)!
        let directorySize = UInt64(reader.uint32(end + 12)!), directoryOffset = UInt64(reader.uint32(end + 16)!)
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
        guard entry.uncompressedSize <= UInt64(limit) else {
            throw .entryTooLarge(name: entry.name, declaredBytes: entry.uncompressedSize, limit: limit)
        }
        guard !entry.encrypted else { throw .unsupported("an encrypted entry (\(entry.name))") }
        let declared = Int(entry.uncompressedSize)
        let range = Int(entry.data.lowerBound)..<Int(entry.data.upperBound)
        let output: Data
        switch entry.method {
        case 0:
            guard entry.compressedSize == entry.uncompressedSize else {
                throw .corruptEntry(name: entry.name, reason: "it is stored with \(entry.compressedSize) bytes but declares \(declared)")
            }
            output = bytes.subdata(in: range)
        case 8:
            let inflated = bytes[range].withUnsafeBytes { compressed in
                Result { () throws(RawDeflate.Failure) in try RawDeflate.inflate(compressed, limit: declared, as: Data.self) }
            }
            switch inflated {
            case .success(let data): output = data
            case .failure(.tooLarge):
                throw .corruptEntry(name: entry.name, reason: "it inflates to more than the \(declared) bytes it declares")
            case .failure(.corrupt):
                throw .corruptEntry(name: entry.name, reason: "its DEFLATE data is corrupt or cut short")
            }
        default:
            throw .unsupported("compression method \(entry.method) (\(entry.name))")
        }
        guard output.count == declared else {
            throw .corruptEntry(name: entry.name, reason: "it inflates to \(output.count) bytes, not the \(declared) it declares")
        }
        let crc = output.withUnsafeBytes { RawDeflate.crc32($0) }
        guard crc == entry.crc32 else {
            throw .corruptEntry(name: entry.name, reason: "its CRC-32 is \(hex(crc)), not the \(hex(entry.crc32)) it declares")
        }
        return output
    }

    /// The end-of-central-directory record: the last one in the final 64 KiB + 22 bytes.
    private static func endOfCentralDirectory(_ reader: ByteReader) throws(Failure) -> UInt64 {
        let size = reader.count
        guard size >= 22 else { throw .malformed("\(size) bytes are too few for a zip archive") }
        var candidate = size - 22
        let lowest = size >= 22 + 0xFFFF ? size - 22 - 0xFFFF : 0
        while true {
            if reader.uint32(candidate) == 0x0605_4B50, let commentLength = reader.uint16(candidate + 20),
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
        guard record + 46 <= end, reader.uint32(record) == 0x0201_4B50 else {
            throw .malformed("central directory record \(index + 1) at \(record) is missing or cut short")
        }
        let flags = reader.uint16(record + 8)!, method = reader.uint16(record + 10)!, crc = reader.uint32(record + 16)!
        let compressed = UInt64(reader.uint32(record + 20)!), uncompressed = UInt64(reader.uint32(record + 24)!)
        let nameLength = UInt64(reader.uint16(record + 28)!), extraLength = UInt64(reader.uint16(record + 30)!)
        let commentLength = UInt64(reader.uint16(record + 32)!), localOffset = UInt64(reader.uint32(record + 42)!)
        position = record + 46 + nameLength + extraLength + commentLength
        guard position <= end else { throw .malformed("central directory record \(index + 1) runs past the directory's end") }
        guard compressed != 0xFFFF_FFFF, uncompressed != 0xFFFF_FFFF, localOffset != 0xFFFF_FFFF else { throw .unsupported("ZIP64") }
        let name = reader.text(record + 46, length: nameLength)

        // The local header repeats the name; the data follows it and must end before the directory.
        guard localOffset + 30 <= dataEnd, reader.uint32(localOffset) == 0x0403_4B50 else {
            throw .malformed("\(name): no local header at \(localOffset)")
        }
        let localNameLength = UInt64(reader.uint16(localOffset + 26)!), localExtraLength = UInt64(reader.uint16(localOffset + 28)!)
        let dataStart = localOffset + 30 + localNameLength + localExtraLength
        guard dataStart + compressed <= dataEnd else {
            throw .malformed("\(name): its \(compressed) bytes at \(dataStart) run past the entries' end (\(dataEnd))")
        }
        guard reader.text(localOffset + 30, length: localNameLength) == name else {
            throw .malformed("\(name): the local header names another entry")
        }
        return Entry(name: name, method: method, compressedSize: compressed, uncompressedSize: uncompressed, crc32: crc,
                     encrypted: flags & 1 != 0, data: dataStart..<(dataStart + compressed))
    }
}

/// Little-endian fields at offsets that may lie anywhere: nil when outside the bytes.
private struct ByteReader {
    let bytes: Data
    var count: UInt64 { UInt64(bytes.count) }

    init(_ bytes: Data) { self.bytes = bytes }

    func uint16(_ offset: UInt64) -> UInt16? {
        guard offset <= count, count - offset >= 2 else { return nil }
        let at = Int(offset)
        return UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
    }

    func uint32(_ offset: UInt64) -> UInt32? {
        guard let low = uint16(offset), let high = uint16(offset + 2) else { return nil }
        return UInt32(low) | UInt32(high) << 16
    }

    /// Only called for ranges already checked to lie inside the bytes.
    func text(_ offset: UInt64, length: UInt64) -> String {
        String(decoding: bytes[Int(offset)..<Int(offset + length)], as: UTF8.self)
    }
}

private func hex(_ value: UInt32) -> String { "0x" + String(value, radix: 16, uppercase: true) }
