import ENArchive
import FoundationEssentials

/// The entries of a key file's zip archive, inflated only within `KeyFileLimits`.
struct ZipEntries {
    /// A key file has two entries (export.bin, export.sig); more than this is not a key file.
    static let maximumEntries = 16

    private let archive: ZipArchive
    private let limits: KeyFileLimits

    init(_ file: Data, limits: KeyFileLimits) throws(KeyFileError) {
        do {
            archive = try ZipArchive(file, maximumEntries: Self.maximumEntries)
        } catch {
            throw .notAZipArchive(error.description)
        }
        self.limits = limits
    }

    func read(_ name: String) throws(KeyFileError) -> Data {
        guard let data = try readIfPresent(name) else { throw .missingEntry(name) }
        return data
    }

    /// The inflated entry, or nil when the archive has none of that name.
    ///
    /// The sizes the archive declares are checked before inflating, and the inflated bytes are
    /// counted while inflating, so a header that lies about the size cannot get past the limit.
    func readIfPresent(_ name: String) throws(KeyFileError) -> Data? {
        guard let entry = archive[name] else { return nil }
        let declared = entry.uncompressedSize, compressed = entry.compressedSize
        let limit = UInt64(limits.maximumEntrySize)
        guard declared <= limit else {
            throw .oversizedEntry(name: name, declaredBytes: declared, compressedBytes: compressed, limit: "\(limit) bytes")
        }
        guard declared <= max(compressed, 1) * UInt64(limits.maximumCompressionRatio) || declared <= 4096 else {
            throw .oversizedEntry(name: name, declaredBytes: declared, compressedBytes: compressed,
                                  limit: "a compression ratio of \(limits.maximumCompressionRatio)")
        }
        do {
            return try archive.extract(entry, limit: limits.maximumEntrySize)
        } catch .corruptEntry(let name, let reason) {
            throw .corruptEntry(name: name, reason: reason)
        } catch {
            throw .notAZipArchive(error.description)
        }
    }
}
