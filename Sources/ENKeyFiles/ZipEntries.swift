import ENArchive
import FoundationEssentials

/// The entries of a key file's zip archive, inflated only within `KeyFileLimits`.
struct ZipEntries {
    /// A key file has two entries (export.bin, export.sig); more than this is not a key file.
    static let maximumEntries = 16

    private let archive: ZipArchive
    private let limits: KeyFileLimits

    init(_ file: some ZipSource, limits: KeyFileLimits) throws(KeyFileError) {
        do {
            archive = try ZipArchive(file, maximumEntries: Self.maximumEntries)
        } catch {
            throw Self.refusal(error)
        }
        self.limits = limits
    }

    /// The inflated entry whole, or nil when the archive has none of that name; for export.sig,
    /// which `limit` keeps small.
    func readIfPresent(_ name: String, limit: Int) throws(KeyFileError) -> Data? {
        guard let entry = archive[name] else { return nil }
        try check(entry, limit: limit)
        do { return try archive.extract(entry, limit: limit) } catch { throw Self.refusal(error) }
    }

    /// A reader of the entry's inflated bytes, `chunkSize` compressed bytes at a time.
    ///
    /// The sizes the archive declares are checked now, before inflating, and the inflated bytes
    /// are counted while inflating, so a header that lies about the size cannot get past the limit.
    func reader(_ name: String, chunkSize: Int) throws(KeyFileError) -> ZipArchive.EntryReader {
        guard let entry = archive[name] else { throw .missingEntry(name) }
        try check(entry, limit: limits.maximumEntrySize)
        do { return try archive.reader(for: entry, limit: limits.maximumEntrySize, chunkSize: chunkSize) } catch { throw Self.refusal(error) }
    }

    private func check(_ entry: ZipArchive.Entry, limit: Int) throws(KeyFileError) {
        let declared = entry.uncompressedSize, compressed = entry.compressedSize
        guard declared <= UInt64(limit) else {
            throw .oversizedEntry(name: entry.name, declaredBytes: declared, compressedBytes: compressed, limit: "\(limit) bytes")
        }
        guard declared <= max(compressed, 1) * UInt64(limits.maximumCompressionRatio) || declared <= 4096 else {
            throw .oversizedEntry(name: entry.name, declaredBytes: declared, compressedBytes: compressed,
                                  limit: "a compression ratio of \(limits.maximumCompressionRatio)")
        }
    }

    static func refusal(_ error: ZipArchive.Failure) -> KeyFileError {
        switch error {
        case .corruptEntry(let name, let reason): return .corruptEntry(name: name, reason: reason)
        case .unreadable(let reason): return .unreadable(reason)
        default: return .notAZipArchive(error.description)
        }
    }
}
