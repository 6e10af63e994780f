import Foundation
import ZIPFoundation

/// The entries of a key file's zip archive, inflated only within `KeyFileLimits`.
struct ZipEntries {
    private let archive: Archive
    private let limits: KeyFileLimits

    init(_ file: Data, limits: KeyFileLimits) throws(KeyFileError) {
        do {
            archive = try Archive(data: file, accessMode: .read)
        } catch {
            throw .notAZipArchive("\(error)")
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
        var data = Data()
        data.reserveCapacity(Int(declared))
        do {
            _ = try archive.extract(entry) { chunk in
                guard UInt64(data.count + chunk.count) <= declared else { throw KeyFileError.corruptEntry(name: name, reason: "it inflates to more than the \(declared) bytes it declares") }
                data.append(chunk)
            }
        } catch let error as KeyFileError {
            throw error
        } catch {
            throw .corruptEntry(name: name, reason: "\(error)")
        }
        guard UInt64(data.count) == declared else {
            throw .corruptEntry(name: name, reason: "it inflates to \(data.count) bytes, not the \(declared) it declares")
        }
        return data
    }
}
