/// Why a diagnosis key file was refused. Every case names what was wrong, so a person can tell
/// a damaged download from a hostile file from a configuration mistake.
public enum KeyFileError: Error, Equatable, CustomStringConvertible {
    case tooLarge(bytes: Int, limit: Int)
    case notAZipArchive(String)
    case missingEntry(String)
    /// An entry that would inflate beyond the limits: refused before inflating.
    case oversizedEntry(name: String, declaredBytes: UInt64, compressedBytes: UInt64, limit: String)
    case corruptEntry(name: String, reason: String)
    case badHeader
    case malformedExport(String)
    case malformedSignatureList(String)
    case invalidKey(index: Int, reason: String)
    /// The file's bytes could not be read (a read error, or a file that changed while it was read).
    case unreadable(String)

    public var description: String {
        switch self {
        case .tooLarge(let bytes, let limit):
            return "the file is \(bytes) bytes, more than the limit of \(limit)"
        case .notAZipArchive(let reason):
            return "not a zip archive (\(reason))"
        case .missingEntry(let name):
            return "the archive has no \(name)"
        case .oversizedEntry(let name, let declared, let compressed, let limit):
            return "\(name) would inflate from \(compressed) to \(declared) bytes, beyond the limit (\(limit)); refused as a possible zip bomb"
        case .corruptEntry(let name, let reason):
            return "\(name) is damaged: \(reason)"
        case .badHeader:
            return "export.bin does not start with the header \"EK Export v1    \""
        case .malformedExport(let reason):
            return "export.bin is not a valid key export: \(reason)"
        case .malformedSignatureList(let reason):
            return "export.sig is not a valid signature list: \(reason)"
        case .invalidKey(let index, let reason):
            return "key #\(index + 1) is invalid: \(reason)"
        case .unreadable(let reason):
            return "cannot read the file: \(reason)"
        }
    }
}
