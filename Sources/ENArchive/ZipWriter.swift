import FoundationEssentials

/// Writes a zip archive in memory, as key export files are: stored or deflated entries, one
/// disk, no ZIP64, no directories.
///
/// The output depends only on the entries (and zlib's version): every entry carries the same
/// fixed time, 1980-01-01 00:00 (the earliest a zip can record), permissions rw-r--r-- and no
/// extra fields. Names are written as given; reading refuses a name twice (`ZipArchive`).
public struct ZipWriter {
    public enum Method: UInt16, Sendable {
        case stored = 0
        case deflated = 8
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// A size, offset or count past the 16 or 32 bits a zip without ZIP64 records it in.
        case beyondZip32(String)

        public var description: String {
            switch self {
            case .beyondZip32(let what): return "\(what): more than a zip archive without ZIP64 can hold"
            }
        }
    }

    /// MS-DOS time and date fields: 00:00:00 and 1980-01-01 (day 1, month 1, year 0 from 1980).
    static let fixedTime: UInt16 = 0, fixedDate: UInt16 = 1 << 5 | 1
    /// Version 2.0 of the zip format: deflate, as every reader knows it.
    static let version: UInt16 = 20
    /// Made by Unix (3), so that the external attributes are a Unix mode.
    static let madeBy: UInt16 = 3 << 8 | version
    /// A regular file, rw-r--r--.
    static let externalAttributes = UInt32(0o100644) << 16
    /// Bit 11: the names are UTF-8.
    static let flags: UInt16 = 1 << 11
    /// 0xFFFF and 0xFFFF_FFFF say "see ZIP64", which this writer does not write.
    static let entryLimit = 0xFFFE, sizeLimit = 0xFFFF_FFFE

    private var entries = [UInt8]()
    private var centralDirectory = [UInt8]()
    private var entryCount = 0

    public init() {}

    /// Appends `contents` as the entry `name`.
    public mutating func add(_ name: String, _ contents: Data, method: Method = .deflated) throws(Failure) {
        let nameBytes = Array(name.utf8)
        guard nameBytes.count <= 0xFFFF else { throw .beyondZip32("the name \(name.prefix(40))… (\(nameBytes.count) bytes)") }
        guard entryCount < Self.entryLimit else { throw .beyondZip32("\(entryCount + 1) entries") }
        guard contents.count <= Self.sizeLimit else { throw .beyondZip32("\(name) (\(contents.count) bytes)") }
        let (crc, compressed) = contents.withUnsafeBytes { bytes in
            (RawDeflate.crc32(bytes), method == .deflated ? RawDeflate.deflate(bytes) : Array(bytes))
        }
        guard compressed.count <= Self.sizeLimit else { throw .beyondZip32("\(name) (\(compressed.count) bytes deflated)") }
        let offset = entries.count
        guard offset <= Self.sizeLimit else { throw .beyondZip32("\(name) at offset \(offset)") }

        // The fields from "version needed" to the name's length, which both headers share.
        var shared = LittleEndianBytes()
        shared.append(Self.version)
        shared.append(Self.flags)
        shared.append(method.rawValue)
        shared.append(Self.fixedTime)
        shared.append(Self.fixedDate)
        shared.append(crc)
        shared.append(UInt32(compressed.count))
        shared.append(UInt32(contents.count))
        shared.append(UInt16(nameBytes.count))

        var local = LittleEndianBytes()
        local.append(UInt32(0x0403_4B50))
        local.bytes += shared.bytes
        local.append(UInt16(0))  // extra field length
        entries += local.bytes + nameBytes + compressed

        var central = LittleEndianBytes()
        central.append(UInt32(0x0201_4B50))
        central.append(Self.madeBy)
        central.bytes += shared.bytes
        central.append(UInt16(0))  // extra field length
        central.append(UInt16(0))  // comment length
        central.append(UInt16(0))  // disk number
        central.append(UInt16(0))  // internal attributes
        central.append(Self.externalAttributes)
        central.append(UInt32(offset))
        centralDirectory += central.bytes + nameBytes
        entryCount += 1
    }

    /// The archive: the entries, the central directory and its end record.
    public func archive() throws(Failure) -> Data {
        guard entries.count <= Self.sizeLimit, centralDirectory.count <= Self.sizeLimit else {
            throw .beyondZip32("an archive of \(entries.count + centralDirectory.count) bytes")
        }
        var end = LittleEndianBytes()
        end.append(UInt32(0x0605_4B50))
        end.append(UInt16(0))  // this disk
        end.append(UInt16(0))  // the disk the directory starts on
        end.append(UInt16(entryCount))  // entries on this disk
        end.append(UInt16(entryCount))  // entries in all
        end.append(UInt32(centralDirectory.count))
        end.append(UInt32(entries.count))
        end.append(UInt16(0))  // comment length
        return Data(entries + centralDirectory + end.bytes)
    }
}

private struct LittleEndianBytes {
    var bytes = [UInt8]()

    mutating func append(_ value: some FixedWidthInteger) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }
}
